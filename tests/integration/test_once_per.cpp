// --once-per D (man clock, COMMANDS): a job started by every host runs at most
// once successfully per period, decided on the database's clock, whatever the
// hosts' clocks say; the requests that find the period done exit 0 without
// running and are recorded as skipped naming the run that did it; a run that
// failed or was killed does not count.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <thread>

#include <doctest/doctest.h>

#include "fault_tools.hpp"
#include "harness.hpp"

using namespace clk::test;
using nlohmann::json;

namespace {

constexpr milliseconds k_period{2000};

// The job: appends its token to `runs`, unless it finds `fail-next` (taken
// by one run only), which makes it announce itself in `failing`, hold the
// lock until the test creates `fail-go`, and exit 1.
const char* const k_job =
    "if rm \"$T_DIR/fail-next\" 2>/dev/null; then\n"
    "  touch \"$T_DIR/failing\"\n"
    "  while [ ! -e \"$T_DIR/fail-go\" ]; do sleep 0.02; done\n"
    "  exit 1\n"
    "fi\n"
    "echo \"$CLOCK_TOKEN\" >> \"$T_DIR/runs\"\n";

// The host clocks of the five processes. On a server (PostgreSQL, MariaDB) they are spread over
// ±30 s: the database's clock decides, so they must make no difference. On
// SQLite the database's clock is the host's (one host, so one clock for all
// of its processes): they share one offset, which must make no difference
// either.
std::vector<std::string> host_clock_offsets() {
  if (backend_name() != "sqlite")
    return {"-30s", "-15s", "+0s", "+15s", "+30s"};
  return {"+20s", "+20s", "+20s", "+20s", "+20s"};
}

Command once_per_job(const TestEnv& env, const std::string& offset) {
  return env.clock_command({"run", "--once-per", std::to_string(k_period.count()) + "ms", "-r",
                            "job", "--", "sh", "-c", k_job},
                           skewed_clock_env(offset));
}

std::vector<long long> tokens_run(const TestEnv& env) {
  std::vector<long long> tokens;
  std::string text = read_file(env.path("runs"));
  for (std::size_t at = 0, end; (end = text.find('\n', at)) != std::string::npos; at = end + 1)
    tokens.push_back(std::stoll(text.substr(at, end - at)));
  return tokens;
}

json once_per_events(const TestEnv& env, const std::string& kind) {
  Result history =
      env.clock({"history", "job", "--event", kind, "--limit", "10000", "--format", "json"});
  REQUIRE_EXIT(history, 0);
  return json::parse(history.out)["events"];
}

// When the lease of `token` was granted (its acquired event), in ms since
// the epoch on the database's clock.
std::int64_t granted_at(const TestEnv& env, long long token) {
  for (const auto& event : once_per_events(env, "acquired")) {
    if (event["token"] == token)
      return epoch_ms(event["at"]);
  }
  FAIL("no acquired event for token " << token);
  return 0;
}

// The database's clock as an offset from this process's wall clock, in ms:
// 0 for a server (with-postgres.sh and with-mariadb.sh run it on this
// machine), the faked offset for SQLite.
std::int64_t offset_ms(const std::string& offset) {
  return backend_name() != "sqlite" ? 0 : std::stoll(offset) * 1000;
}

}  // namespace

TEST_SUITE("once per") {
  TEST_CASE(
      "five hosts with clocks spread over 60 s run a --once-per job once per period, around "
      "each period's end; a failed run lets the next request of the period run") {
    if (libfaketime_path().empty()) {
      FAIL("libfaketime is not installed (packaging/install-deps.sh installs it)");
      return;
    }
    TestEnv env;
    const auto offsets = host_clock_offsets();
    const std::int64_t db_offset = offset_ms(offsets[0]);
    // Launch times around the end of the period of the last success: two
    // before it (they find it done), three after (one runs, the others find
    // its period done); in the failing round all after it.
    const std::vector<milliseconds> around = {-600ms, -300ms, 100ms, 300ms, 500ms};
    const std::vector<milliseconds> after = {100ms, 200ms, 300ms, 400ms, 500ms};
    constexpr int k_rounds = 5;
    constexpr int k_failing_round = 3;
    int failures = 0;
    std::size_t runs_before = 0;
    std::vector<std::int64_t> round_start;  // on the database's clock, ms
    auto db_now_ms = [&] {
      return std::chrono::duration_cast<milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count() +
             db_offset;
    };
    for (int round = 0; round < k_rounds; ++round) {
      CAPTURE(round);
      const bool failing = round == k_failing_round;
      if (failing)
        write_file(env.path("fail-next"), "");
      std::vector<std::unique_ptr<Process>> processes;
      round_start.push_back(db_now_ms());
      if (round == 0) {
        for (const auto& offset : offsets)
          processes.push_back(env.spawn(once_per_job(env, offset)));
      } else {
        auto tokens = tokens_run(env);
        REQUIRE(!tokens.empty());
        // The end of the last success's period on this process's clock.
        std::chrono::system_clock::time_point end{
            milliseconds(granted_at(env, tokens.back()) - db_offset + k_period.count())};
        const auto& schedule = failing ? after : around;
        for (std::size_t i = 0; i < offsets.size(); ++i) {
          std::this_thread::sleep_until(end + schedule[i]);
          if (i == 0)
            round_start.back() = db_now_ms();
          processes.push_back(env.spawn(once_per_job(env, offsets[i])));
        }
      }
      if (failing) {
        // The failing run holds the lock until the four others wait for it.
        REQUIRE(await(
            [&] { return fs::exists(env.path("failing")) && env.status()["waiters"].size() == 4; },
            30s));
        write_file(env.path("fail-go"), "");
      }
      int exited_1 = 0;
      for (auto& process : processes) {
        Result result = process->wait(60s);
        INFO(result.describe());
        CHECK((result.status == 0 || (failing && result.status == 1)));
        exited_1 += result.status == 1;
        if (result.status == 0)
          CHECK(result.err.empty());  // ran or skipped: nothing for cron to mail
      }
      CHECK(exited_1 == (failing ? 1 : 0));
      failures += exited_1;
      auto tokens = tokens_run(env);
      CHECK(tokens.size() == runs_before + 1);  // exactly one successful run per round
      runs_before = tokens.size();
    }

    // The successful runs: their starts, on the database's clock, are at
    // least a period apart.
    auto successes = tokens_run(env);
    REQUIRE(successes.size() == k_rounds);
    std::map<long long, std::int64_t> started;
    for (auto token : successes)
      started[token] = granted_at(env, token);
    for (std::size_t i = 1; i < successes.size(); ++i)
      CHECK(started[successes[i]] - started[successes[i - 1]] >= k_period.count());
    // The failed run was granted, and is named by no skip.
    auto acquired = once_per_events(env, "acquired");
    CHECK(acquired.size() == successes.size() + failures);

    // Every other request was skipped, naming the latest success before it,
    // started within the period before the skip.
    auto skipped = once_per_events(env, "skipped");
    CHECK(skipped.size() == 5 * k_rounds - successes.size() - failures);
    int before_end = 0;  // skips of a round that named the previous round's run
    for (const auto& skip : skipped) {
      CAPTURE(skip.dump());
      REQUIRE(skip["done_by"].is_object());
      CHECK(skip["in_the_way"].is_null());
      CHECK(skip["token"] == 0);
      long long token = skip["done_by"]["token"];
      REQUIRE(started.count(token) == 1);
      CHECK(epoch_ms(skip["done_by"]["started_at"]) == started[token]);
      auto at = epoch_ms(skip["at"]);
      CHECK(at - started[token] >= 0);
      CHECK(at - started[token] <= k_period.count());
      for (auto [other, other_start] : started)
        CHECK((other_start <= started[token] || other_start > at));
      CHECK(skip["done_by"]["host"] == host_name());
      CHECK(is_uuid(skip["done_by"]["owner"]));
      auto round =
          std::upper_bound(round_start.begin(), round_start.end(), at) - round_start.begin() - 1;
      before_end += round > 0 && token != successes.at(static_cast<std::size_t>(round));
    }
    MESSAGE(k_rounds << " periods: " << successes.size() << " runs, " << failures << " failed run, "
                     << skipped.size() << " skipped (" << before_end
                     << " before the period's end, naming the previous period's run)");
  }

  TEST_CASE("-E 3 --once-per exits 3 when the period is done, without running, quietly") {
    TestEnv env;
    CHECK_EXIT(env.clock({"run", "--once-per", "1h", "-r", "job", "--", "true"}), 0);
    Result skipped = env.clock(
        {"run", "-E", "3", "--once-per", "1h", "-r", "job", "--", "touch", env.path("ran")});
    CHECK_EXIT(skipped, 3);
    CHECK(skipped.err.empty());
    CHECK(!fs::exists(env.path("ran")));
    // -v says which run did the period.
    Result verbose =
        env.clock({"run", "-v", "--once-per", "1h", "-r", "job", "--", "touch", env.path("ran")});
    CHECK_EXIT(verbose, 0);
    CHECK(verbose.err.find("already ran successfully within --once-per 1h") != std::string::npos);
    CHECK(!fs::exists(env.path("ran")));
    CHECK(once_per_events(env, "skipped").size() == 2);
  }

  TEST_CASE("a failed or killed run does not count for --once-per; any successful run does") {
    TestEnv env;
    CHECK_EXIT(env.clock({"run", "--once-per", "1h", "-r", "job", "--", "false"}), 1);
    CHECK_EXIT(env.clock({"run", "--once-per", "1h", "--max-runtime", "200ms", "-r", "job", "--",
                          "sleep", "30"}),
               124);
    CHECK(once_per_events(env, "skipped").empty());
    // A plain run of the job (by hand, without --once-per) does the period.
    CHECK_EXIT(env.clock({"run", "-r", "job", "--", "true"}), 0);
    CHECK_EXIT(env.clock({"run", "--once-per", "1h", "-r", "job", "--", "touch", env.path("ran")}),
               0);
    CHECK(!fs::exists(env.path("ran")));
    // Another resource, or a period shorter than the time since, runs.
    CHECK_EXIT(env.clock({"run", "--once-per", "1h", "-r", "other", "--", "true"}), 0);
    // It names the plain run, the latest grant of the job.
    auto skipped = once_per_events(env, "skipped");
    REQUIRE(skipped.size() == 1);
    CHECK(skipped[0]["done_by"]["token"] == once_per_events(env, "acquired")[0]["token"]);
    CHECK_EXIT(env.clock({"run", "--once-per", "1ms", "-r", "job", "--", "touch", env.path("ran")}),
               0);
    CHECK(fs::exists(env.path("ran")));
  }

  TEST_CASE("--once-per refuses a period of 0") {
    TestEnv env;
    Result refused = env.clock({"run", "--once-per", "0", "-r", "job", "--", "true"});
    CHECK_EXIT(refused, 64);
    CHECK(refused.err_lines().size() == 1);
  }
}
