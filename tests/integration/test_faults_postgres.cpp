// PostgreSQL faults (man clock, EXIT STATUS, §5): the server gone for longer than a running
// job's TTL, the server down when clock starts, and a connection lost right
// after an acquire committed. (A server stopped for less than the TTL is
// "a lease held across a PostgreSQL restart…" in test_postgres.cpp.) They run
// with CLOCK_TEST_BACKEND=postgres only; the outage tests stop the shared
// test server and bring it back before they return, whatever happened.
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "fault_tools.hpp"
#include "harness.hpp"
#include "postgres_tools.hpp"
#include "sections.hpp"

using namespace clk::test;
using nlohmann::json;

namespace {

// `clock acquire --format json ARGS…` with the test fault hook armed to lose
// the reply of the first acquire. Returns nothing (and says so) when this
// build has no fault hooks (CMake option CLOCK_TEST_FAULTS).
std::optional<Acquired> acquire_losing_reply(const TestEnv& env,
                                             const std::vector<std::string>& args) {
  std::vector<std::string> full = {"acquire", "--format", "shell"};
  full.insert(full.end(), args.begin(), args.end());
  Result result = env.clock(full, {{"CLOCK_TEST_FAULT", "drop-reply:acquire"}});
  INFO(result.describe());
  REQUIRE(result.status == 0);
  // The module's log lines go to stderr, like clock's own: stdout stays the
  // JSON a script parses (or the shell it evals).
  CHECK(result.out.find("test fault") == std::string::npos);
  if (result.err.find("test fault: dropping the connection after acquire") == std::string::npos)
    return std::nullopt;
  Acquired acquired;
  REQUIRE_NOTHROW(acquired = parse_acquired_shell(result.out));
  return acquired;
}

}  // namespace

TEST_SUITE("faults-postgres") {
  TEST_CASE(
      "PostgreSQL down for a while under a running job: one line per failed renewal in our "
      "words, one line when renewals succeed again, exit 0" *
      doctest::timeout(300) * ::clk::test::only_on("postgres")) {
    TestEnv env;
    pg::ServerRestorer restorer(env);  // after env: the server is up before env drops its database
    REQUIRE(pg::server_answers(env));
    auto holder = env.spawn(
        env.clock_command({"run", "--ttl", "30s", "--heartbeat", "1s", "--kill-after", "1s", "-r",
                           "job", "--", "sh", "-c", env.holding_script("holder")}));
    REQUIRE(env.await_started("holder"));
    REQUIRE_EXIT(pg::pg_ctl(env, {"stop", "-m", "immediate"}), 0);
    std::this_thread::sleep_for(4s);  // a few failed renewals
    REQUIRE_EXIT(pg::pg_ctl(env, {"start"}), 0);
    REQUIRE(await([&] { return pg::server_answers(env); }, 60s, 100ms));
    std::this_thread::sleep_for(3s);  // a renewal succeeds again
    env.let_go("holder");
    Result finished = holder->wait(60s);
    CHECK_EXIT(finished, 0);
    int failures = 0;
    for (const auto& line : finished.err_lines()) {
      CAPTURE(line);
      CHECK(line.find("client encoding") == std::string::npos);
      CHECK(line.find("clock status") == std::string::npos);
      if (line.find("renewing the lease on job failed (attempt ") == std::string::npos)
        continue;
      ++failures;
      CHECK(line.find("the database is unavailable; next try in ") != std::string::npos);
      CHECK(line.find("the command is stopped in ") != std::string::npos);
    }
    INFO(finished.err);
    CHECK(failures >= 1);
    // Every line is a failed attempt but the last, which says it is over.
    CHECK(finished.err_lines().size() == static_cast<std::size_t>(failures) + 1);
    CHECK(finished.err.find("renewed the lease on job again after " + std::to_string(failures) +
                            " failed attempt") != std::string::npos);
  }

  TEST_CASE(
      "PostgreSQL down for longer than the TTL: the child is stopped, clock exits 79, a "
      "newcomer under -n exits 69, and the next holder runs only after" *
      doctest::timeout(300) * ::clk::test::only_on("postgres")) {
    TestEnv env;
    pg::ServerRestorer restorer(env);  // after env: the server is up before env drops its database
    REQUIRE(pg::server_answers(env));

    // The holder's child logs a section as it starts and another when it is
    // told to stop.
    std::string child =
        "trap '\"$T_CS\" \"$T_DIR/counter\" \"$T_DIR/log\"; exit 0' TERM\n"
        "\"$T_CS\" \"$T_DIR/counter\" \"$T_DIR/log\" || exit 2\n"
        "touch \"$T_DIR/holder.started\"\n"
        "while :; do sleep 0.05; done\n";
    auto holder =
        env.spawn(env.clock_command({"run", "--ttl", "5s", "--heartbeat", "1s", "--kill-after",
                                     "1s", "-r", "job", "--", "sh", "-c", child}));
    REQUIRE(env.await_started("holder"));
    const long long holder_token = only_holder(env, "job").at("token");

    REQUIRE_EXIT(pg::pg_ctl(env, {"stop", "-m", "immediate"}), 0);
    auto stopped = Clock::now();

    // Down at start, under -n: exit 69 once -n's patience for server
    // trouble (5 s) is spent, one line, no child. (Without -n it would wait.)
    Result refused =
        env.clock({"run", "-n", "-r", "other", "--", "sh", "-c", "touch \"$T_DIR/ran\""});
    CHECK_EXIT(refused, 69);
    CHECK(refused.seconds < 10);
    CHECK(refused.err_lines().size() == 1);
    CHECK_FALSE(fs::exists(env.path("ran")));
    MESSAGE("clock run with the server down exited " << refused.status << " after "
                                                     << refused.seconds << " s");

    // The holder cannot renew: its child is stopped before the TTL is out.
    Result lost = holder->wait(60s);
    double seconds = std::chrono::duration<double>(Clock::now() - stopped).count();
    CHECK_EXIT(lost, 79);
    MESSAGE("the holder exited " << lost.status << " " << seconds << " s after the server stopped");
    std::vector<Section> sections = read_sections(env.path("log"));
    REQUIRE(sections.size() == 2);  // its start and its stop

    REQUIRE_EXIT(pg::pg_ctl(env, {"start"}), 0);
    REQUIRE(await([&] { return pg::server_answers(env); }, 60s, 100ms));

    Result next = env.clock({"run", "-w", "60s", "-r", "job", "--", "sh", "-c",
                             "exec \"$T_CS\" \"$T_DIR/counter\" \"$T_DIR/log\""});
    CHECK_EXIT(next, 0);
    sections = read_sections(env.path("log"));
    REQUIRE(sections.size() == 3);
    CHECK(std::stoll(sections[2].token) > holder_token);
    check_sections(sections, false);
    CHECK(sections[2].start > sections[1].end);
    CHECK(std::stoll("0" + read_file(env.path("counter"))) == 3);
  }

  TEST_CASE(
      "a grant survives a server crash right after it, even with synchronous_commit off, and "
      "the next grant gets a larger token" *
      doctest::timeout(300) * ::clk::test::only_on("postgres")) {
    TestEnv env;
    pg::ServerRestorer restorer(env);
    REQUIRE_EXIT(env.clock({"init"}), 0);
    // with-postgres.sh runs the server with synchronous_commit = off (speed):
    // a commit may be lost in a crash unless clock asks for a durable one.
    pg::PsqlSession psql(env, env.url());
    MESSAGE("the test server's synchronous_commit: " << psql.execute("SHOW synchronous_commit"));
    CHECK(psql.finish() == 0);

    long long last_token = 0;
    for (int round = 0; round < 3; ++round) {
      CAPTURE(round);
      const std::string resource = "crash" + std::to_string(round);
      Acquired granted = env.acquire({"--ttl", "5m", "-r", resource});
      CHECK(granted.token() > last_token);
      last_token = granted.token();
      REQUIRE_EXIT(pg::pg_ctl(env, {"stop", "-m", "immediate"}), 0);  // a crash
      REQUIRE_EXIT(pg::pg_ctl(env, {"start"}), 0);
      REQUIRE(await([&] { return pg::server_answers(env); }, 60s, 100ms));
      json held = only_holder(env, resource);
      CHECK(held.at("owner") == granted.owner);
      CHECK(held.at("token") == granted.token());
    }
    Acquired after = env.acquire({"-r", "after"});
    CHECK(after.token() > last_token);
  }

  TEST_CASE(
      "an acquire whose reply is lost after it committed is retried once and takes effect once: "
      "one grant, one token, no extra re-entry" *
      ::clk::test::only_on("postgres")) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);

    auto first = acquire_losing_reply(env, {"-r", "once"});
    if (!first) {
      MESSAGE("skipped: this build has no test fault hooks (CMake option CLOCK_TEST_FAULTS=OFF)");
      return;
    }
    json lease = only_holder(env, "once");
    CHECK(lease.at("owner") == first->owner);
    CHECK(lease.at("token") == first->token());
    CHECK(lease.at("depth") == 1);
    CHECK(event_names(history_of(env, "once"), first->owner) ==
          std::vector<std::string>{"acquired"});

    // Re-entry by the same owner, reply lost again: depth 2, not 3.
    auto again = acquire_losing_reply(env, {"--owner", first->credential, "-r", "once"});
    REQUIRE(again);
    CHECK(again->token() == first->token());
    lease = only_holder(env, "once");
    CHECK(lease.at("depth") == 2);
    CHECK(lease.at("token") == first->token());
    CHECK(event_names(history_of(env, "once"), first->owner) ==
          std::vector<std::string>{"acquired"});

    // Two releases free it; a third finds nothing to release.
    CHECK_EXIT(env.clock({"release", "-r", "once", "--owner", first->credential}), 0);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "once"}, {}), 75);
    CHECK_EXIT(env.clock({"release", "-r", "once", "--owner", first->credential}), 0);
    CHECK_EXIT(env.clock({"release", "-r", "once", "--owner", first->credential}), 77);

    // Several resources at once: each granted once.
    auto both = acquire_losing_reply(env, {"-r", "a", "-r", "b"});
    REQUIRE(both);
    for (const std::string resource : {"a", "b"}) {
      json held = only_holder(env, resource);
      CHECK(held.at("owner") == both->owner);
      CHECK(held.at("depth") == 1);
      CHECK(event_names(history_of(env, resource), both->owner) ==
            std::vector<std::string>{"acquired"});
    }
  }
}
