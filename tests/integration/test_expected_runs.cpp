// Missed runs (man clock, COMMANDS): a resource's expected period, declared by
// `clock run --once-per D` or `--every D`, makes a period with no successful
// run visible: status shows the last success and OVERDUE, `clock missed`
// lists the missed periods and exits as a Nagios check (2 overdue, 1 missed
// but caught up), Prometheus gets the last success and the period, and the
// shipped alert rules fire on them (promtool test rules).
#include <algorithm>
#include <chrono>
#include <regex>
#include <string>
#include <thread>

#include <doctest/doctest.h>

#include "common_helpers.hpp"
#include "fault_tools.hpp"
#include "harness.hpp"
#include "server_tools.hpp"

using namespace clk::test;
using nlohmann::json;

namespace {

constexpr std::int64_t k_period_ms = 1500;

std::int64_t now_ms() {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

json expected_of(const TestEnv& env, const std::string& resource) {
  Result status = env.clock({"status", resource, "--format", "json"});
  REQUIRE(status.status <= 1);
  const json parsed = json::parse(status.out);
  for (const auto& run : parsed["expected"]) {
    if (run["resource"] == resource)
      return run;
  }
  FAIL("status lists no expected run of " << resource << ":\n" << status.out);
  return {};
}

std::optional<double> sample(const std::string& metrics, const std::string& name,
                             const std::string& resource) {
  std::regex line("(^|\n)" + name + "\\{namespace=\"\",resource=\"" + resource +
                  "\"\\} ([-0-9.e+]+)\n");
  std::smatch match;
  return std::regex_search(metrics, match, line) ? std::optional(std::stod(match[2]))
                                                 : std::nullopt;
}

// The success log of `resource` on any backend, as the database's own
// client prints it: "rows|lowest ordinal|highest ordinal".
std::string success_log_of(const TestEnv& env, const std::string& resource) {
  const std::string where = " FROM successes WHERE resource = '" + resource + "'";
  const std::string count = "SELECT COUNT(*), MIN(ordinal), MAX(ordinal)";
  if (backend_name() == "sqlite") {
    Result out =
        env.shell("sqlite3 \"$DB\" \"" + count + where + "\"", {{"DB", env.url().substr(7)}});
    REQUIRE_EXIT(out, 0);
    return first_line(out.out);
  }
  std::string row = server::sql_value(
      env, {.postgres = count + " FROM clock.successes WHERE resource = '" + resource + "'",
            .mariadb = count + where});
  std::replace(row.begin(), row.end(), '\t', '|');  // mariadb -B separates by tabs
  return row;
}

// Numbers the one logged start of `resource` 1045 and logs 1044 earlier
// starts before it (ordinals 1 to 1044, a minute apart), as if the job had
// run that often: five successes short of the next prune (at ordinal 1050).
void fill_success_log(const TestEnv& env, const std::string& resource) {
  const std::string one = " WHERE resource = '" + resource + "'";
  if (backend_name() == "sqlite") {
    REQUIRE_EXIT(
        env.shell("sqlite3 \"$DB\" \"UPDATE successes SET ordinal = 1045" + one +
                      "; WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE "
                      "i < 1044) INSERT INTO successes (namespace, resource, started_at, ordinal) "
                      "SELECT namespace, resource, started_at - i * 60000, 1045 - i FROM "
                      "successes, n" +
                      one + "\"",
                  {{"DB", env.url().substr(7)}}),
        0);
    return;
  }
  server::sql_value(
      env, {.postgres = "UPDATE clock.successes SET ordinal = 1045" + one +
                        "; INSERT INTO clock.successes (namespace, resource, started_at, ordinal) "
                        "SELECT namespace, resource, started_at - g * interval '1 minute', "
                        "1045 - g FROM clock.successes, generate_series(1, 1044) AS g" +
                        one + "; SELECT 'filled'",
            .mariadb = "UPDATE successes SET ordinal = 1045" + one +
                       "; INSERT INTO successes (namespace, resource, started_us, ordinal) "
                       "SELECT namespace, resource, started_us - g.seq * 60000000, 1045 - g.seq "
                       "FROM successes, seq_1_to_1044 AS g" +
                       one + "; SELECT 'filled'"});
}

}  // namespace

TEST_SUITE("missed runs") {
  TEST_CASE(
      "--once-per loops stopped for two periods: clock missed lists exactly those periods and "
      "exits 2, status shows the last success overdue, Prometheus the last success") {
    TestEnv env;
    const std::string loop =
        "while [ ! -e \"$T_DIR/stop\" ]; do\n"
        "  \"$T_CLOCK\" run -r rep --once-per " +
        std::to_string(k_period_ms) +
        "ms -- true || exit 1\n"
        "  sleep 0.05\n"
        "done\n";
    std::vector<std::unique_ptr<Process>> loops;
    for (int n = 0; n < 3; ++n)
      loops.push_back(env.spawn(env.shell_command(loop)));
    std::this_thread::sleep_for(4s);
    // While the loops run, every period has its run: asked while they still
    // run, since the current period's run comes up to a run's latency after
    // the period starts (a check after they stop could fall in that gap);
    // a missed period in the past would keep this at 2.
    CHECK(await(
        [&] {
          return env.clock({"missed", "rep", "--since", "30s"}).status == 0;
        },
        10s, 50ms));
    write_file(env.path("stop"), "");
    for (auto& loop_process : loops)
      CHECK_EXIT(loop_process->wait(60s), 0);

    json expected = expected_of(env, "rep");
    CHECK(expected["every_ms"] == k_period_ms);
    const std::int64_t last = epoch_ms(expected["last_success"]);

    // Two whole periods after the first one that no run covered.
    const std::int64_t due = last + k_period_ms;
    while (now_ms() < due + 2 * k_period_ms + 100)
      std::this_thread::sleep_for(50ms);
    Result missed = env.clock({"missed", "rep", "--since", "30s", "--format", "json"});
    CHECK_EXIT(missed, 2);
    INFO(missed.out);
    json listed = json::parse(missed.out)["resources"];
    REQUIRE(listed.size() == 1);
    CHECK(listed[0]["missed"] == 2);
    json periods = listed[0]["periods"];
    REQUIRE(periods.size() == 3);
    for (int i = 0; i < 3; ++i) {
      CAPTURE(i);
      CHECK(epoch_ms(periods[i]["from"]) == due + i * k_period_ms);
      CHECK(epoch_ms(periods[i]["to"]) == due + (i + 1) * k_period_ms);
      CHECK(periods[i]["state"] == (i < 2 ? "missed" : "overdue"));
    }
    Result table = env.clock({"missed", "rep", "--since", "30s"});
    CHECK_EXIT(table, 2);
    CHECK(table.out.find("OVERDUE") != std::string::npos);
    // A command that ends a third period after the first missed one (a
    // loaded machine: each clock call can take a few hundred ms) sees that
    // period missed too: each of these says what it saw when it ran.
    const auto missed_by = [&](std::int64_t at) { return (at - due) / k_period_ms; };
    std::int64_t asked = now_ms();
    Result nagios = env.clock({"missed", "--since", "30s", "--format", "nagios"});
    std::int64_t answered = now_ms();
    CHECK_EXIT(nagios, 2);
    INFO(nagios.out);
    CHECK((nagios.out.starts_with("CLOCK CRITICAL - 1 overdue: rep; " +
                                  std::to_string(missed_by(asked)) + " missed periods") ||
           nagios.out.starts_with("CLOCK CRITICAL - 1 overdue: rep; " +
                                  std::to_string(missed_by(answered)) + " missed periods")));

    json overdue = expected_of(env, "rep");
    CHECK(overdue["overdue"] == true);
    CHECK(epoch_ms(overdue["last_success"]) == last);
    Result status = env.clock({"status"});
    CHECK(status.out.find("OVERDUE") != std::string::npos);

    Result metrics = env.clock({"status", "--format", "prometheus"});
    REQUIRE_EXIT(metrics, 0);
    INFO(metrics.out);
    CHECK(sample(metrics.out, "clock_last_success_timestamp_seconds", "rep").value_or(0) ==
          doctest::Approx(last / 1000.0).epsilon(1e-12));
    CHECK(sample(metrics.out, "clock_expected_interval_seconds", "rep") == 1.5);
    CHECK(sample(metrics.out, "clock_run_overdue", "rep") == 1.0);
    Command check = env.command({promtool(), "check", "metrics"});
    check.stdin_text = metrics.out;
    Result checked = run(check, env.path("output"));
    CHECK_EXIT(checked, 0);
    CHECK(checked.out.empty());

    // A run catches up: nothing is overdue, the missed periods stay listed (1).
    asked = now_ms();
    REQUIRE_EXIT(env.clock({"run", "-r", "rep", "--once-per", "1500ms", "--", "true"}), 0);
    answered = now_ms();
    Result warning = env.clock({"missed", "rep", "--since", "30s", "--format", "json"});
    CHECK_EXIT(warning, 1);
    const auto caught_up_missed = json::parse(warning.out)["resources"][0]["missed"];
    CHECK((caught_up_missed == missed_by(asked) || caught_up_missed == missed_by(answered)));
  }

  TEST_CASE(
      "--every runs every time, declares the period, and only a run that exits 0 counts; a "
      "resource never run successfully is due one period after its declaration") {
    TestEnv env;
    CHECK_EXIT(env.clock({"run", "-r", "ev", "--every", "1s", "--", "true"}), 0);
    CHECK_EXIT(env.clock({"run", "-r", "ev", "--every", "1s", "--", "true"}), 0);
    Result history = env.clock({"history", "ev", "--event", "acquired", "--format", "json"});
    CHECK(json::parse(history.out)["events"].size() == 2);  // no at-most-once
    CHECK(expected_of(env, "ev")["every_ms"] == 1000);
    CHECK_EXIT(env.clock({"run", "-r", "ev", "--every", "1s", "--", "false"}), 1);
    const auto before_declaring = std::chrono::steady_clock::now();
    CHECK_EXIT(env.clock({"run", "-r", "never", "--every", "1s", "--", "false"}), 1);
    CHECK(expected_of(env, "never")["last_success"].is_null());
    Result missed_at_once = env.clock({"missed", "never"});
    // Not yet due, when this all took less than its one-second period (a
    // sanitizer build on a loaded machine may take longer: it is then due).
    if (std::chrono::steady_clock::now() - before_declaring < 1s)
      CHECK_EXIT(missed_at_once, 0);
    std::this_thread::sleep_for(1100ms);
    CHECK(expected_of(env, "ev")["overdue"] == true);
    CHECK(expected_of(env, "never")["overdue"] == true);
    CHECK_EXIT(env.clock({"missed", "never"}), 2);
    // --every sets the period apart from --once-per's.
    CHECK_EXIT(env.clock({"run", "-r", "ev", "--once-per", "1s", "--every", "1h", "--", "true"}),
               0);
    CHECK(expected_of(env, "ev")["every_ms"] == 3600000);
    CHECK(expected_of(env, "ev")["overdue"] == false);
  }

  // docs/threat-model.md, "Expected periods": until a period changed only
  // with a successful run, `run --every 30d -- false` turned the overdue
  // (CRITICAL) job below into OK, and nothing in history said so.
  TEST_CASE(
      "a failed run cannot change an expected period: clock missed still exits 2; a successful "
      "one can, and every declaration and change is history (period_changed) with who made it") {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"run", "-r", "nightbk", "--every", "1s", "--", "true"}), 0);
    std::this_thread::sleep_for(1100ms);
    REQUIRE_EXIT(env.clock({"missed", "nightbk"}), 2);

    CHECK_EXIT(env.clock({"run", "-r", "nightbk", "--every", "30d", "--", "false"}), 1);
    CHECK_EXIT(env.clock({"missed", "nightbk"}), 2);
    CHECK(expected_of(env, "nightbk")["every_ms"] == 1000);
    Result attempts = env.clock({"history", "nightbk", "--format", "json"});
    const json events = json::parse(attempts.out)["events"];
    INFO(attempts.out);
    // Newest first: the failed run's release and grant, then the first
    // run's release, its declaration (1 s: there was none) and its grant.
    REQUIRE(events.size() == 5);
    CHECK(events[0]["event"] == "released");
    CHECK(events[1]["event"] == "acquired");
    CHECK(events[3]["event"] == "period_changed");
    CHECK(events[3]["every_ms"] == 1000);
    CHECK(events[3]["previous_every_ms"].is_null());

    // A successful run changes it, and the change names the run.
    REQUIRE_EXIT(env.clock({"run", "-r", "nightbk", "--every", "30d", "--", "true"}), 0);
    CHECK(expected_of(env, "nightbk")["every_ms"] == 30LL * 24 * 3600 * 1000);
    Result after = env.clock({"missed", "nightbk"});
    CHECK((after.status == 0 || after.status == 1));  // no longer overdue
    Result changes =
        env.clock({"history", "nightbk", "--event", "period_changed", "--format", "json"});
    const json changed = json::parse(changes.out)["events"];
    INFO(changes.out);
    REQUIRE(changed.size() == 2);
    CHECK(changed[0]["every_ms"] == 30LL * 24 * 3600 * 1000);
    CHECK(changed[0]["previous_every_ms"] == 1000);
    CHECK(changed[0]["command"].get<std::string>().find("true") != std::string::npos);
    CHECK(changed[0]["by"].get<std::string>().find(" pid ") != std::string::npos);
    CHECK_FALSE(changed[0]["db_user"].get<std::string>().empty());
  }

  TEST_CASE("bad --every and --since values are usage errors, one line each") {
    TestEnv env;
    for (const auto& args :
         std::vector<std::vector<std::string>>{{"run", "-r", "x", "--every", "0", "--", "true"},
                                               {"run", "-r", "x", "--every", "soon", "--", "true"},
                                               {"run", "-r", "x", "--every", "1ms", "--", "true"},
                                               {"run", "-r", "x", "--every", "999ms", "--", "true"},
                                               {"run", "-r", "x", "--every", "367d", "--", "true"},
                                               {"missed", "--since", "yesterday"}}) {
      Result result = env.clock(args);
      CAPTURE(args.back());
      CHECK_EXIT(result, 64);
      CHECK(result.err_lines().size() == 1);
    }
  }

  TEST_CASE("a version 7 database upgrades in place: live lease intact, last success kept" *
            only_on("sqlite")) {
    TestEnv env;
    std::string url = env.url();
    fs::path db = url.substr(7);
    std::string migrations = std::string(CLOCK_TEST_SQL_DIR) + "/sqlite/migrations/";
    auto holder = env.acquire({"-r", "held", "--ttl", "1h"});
    REQUIRE_EXIT(env.clock({"run", "-r", "job", "--", "true"}), 0);  // no expectation yet
    // Back to version 7: drop what 008 and later versions made.
    REQUIRE_EXIT(env.shell("sqlite3 \"$DB\" 'DROP TABLE expected_runs; DROP TABLE successes; "
                           "DROP TRIGGER last_success_logs_insert; "
                           "DROP TRIGGER last_success_logs_update; "
                           "ALTER TABLE leases DROP COLUMN leftovers; "
                           "ALTER TABLE history DROP COLUMN leftovers; "
                           "ALTER TABLE history DROP COLUMN exit_code; "
                           "ALTER TABLE history DROP COLUMN exit_signal; DROP TABLE run_results; "
                           "DROP TABLE period_changes; "
                           "ALTER TABLE leases DROP COLUMN holder_boot_id; "
                           "ALTER TABLE leases DROP COLUMN holder_pid_ns; "
                           "ALTER TABLE leases DROP COLUMN holder_pid_start; "
                           "ALTER TABLE leases DROP COLUMN job_group; "
                           "ALTER TABLE leases DROP COLUMN job_cgroup; "
                           "PRAGMA user_version = 7'",
                           {{"DB", db.string()}}),
                 0);
    CHECK(env.holders_of("held").size() == 1);
    REQUIRE_EXIT(env.clock({"run", "-r", "job", "--every", "1h", "--", "true"}), 0);
    CHECK(env.holders_of("held").size() == 1);
    CHECK(env.holders_of("held")[0]["token"] == holder.token());
    Result missed = env.clock({"missed", "job", "--since", "1h", "--format", "json"});
    CHECK_EXIT(missed, 0);
    CHECK(json::parse(missed.out)["resources"][0]["last_success"].is_string());
  }

  TEST_CASE("a namespace holding a newline, '|' or ESC cannot forge Nagios output" *
            only_on("sqlite")) {
    // Only a direct writer can store such a namespace (clock refuses it):
    // here the SQLite file, on the servers a login calling the routines.
    TestEnv env;
    REQUIRE_EXIT(env.clock({"run", "-r", "rep", "--every", "1h", "--", "true"}), 0);
    REQUIRE_EXIT(env.shell("sqlite3 \"$DB\" \"INSERT INTO expected_runs VALUES "
                           "(char(10) || 'CLOCK OK - all fine | overdue=0' || char(27) || '[2J', "
                           "'forged', 1000, 0)\"",
                           {{"DB", env.url().substr(7)}}),
                 0);
    Result nagios = env.clock({"missed", "--format", "nagios"});
    CHECK_EXIT(nagios, 2);
    INFO(nagios.out);
    CHECK(
        nagios.out.starts_with("CLOCK CRITICAL - 1 overdue: "
                               "\\x0aCLOCK OK - all fine \\x7c overdue=0\\x1b[2J:forged; "));
    CHECK(std::count(nagios.out.begin(), nagios.out.end(), '\n') == 1);
    CHECK(std::count(nagios.out.begin(), nagios.out.end(), '|') == 1);
    CHECK(nagios.out.find('\x1b') == std::string::npos);
  }

  TEST_CASE("the success log keeps the newest 1000 starts of a resource, pruned at every 50th") {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"run", "-r", "log.full", "--", "true"}), 0);
    CHECK(success_log_of(env, "log.full") == "1|1|1");
    fill_success_log(env, "log.full");
    REQUIRE(success_log_of(env, "log.full") == "1045|1|1045");
    // The 1046th to 1049th successes are logged and prune nothing.
    for (int run = 0; run < 4; ++run)
      REQUIRE_EXIT(env.clock({"run", "-r", "log.full", "--", "true"}), 0);
    CHECK(success_log_of(env, "log.full") == "1049|1|1049");
    // The 50th since the last prune keeps the newest 1000: its own start
    // and the 999 before it.
    REQUIRE_EXIT(env.clock({"run", "-r", "log.full", "--", "true"}), 0);
    CHECK(success_log_of(env, "log.full") == "1000|51|1050");
    // A failed run is no success: nothing is logged.
    REQUIRE_EXIT(env.clock({"run", "-r", "log.full", "--", "false"}), 1);
    CHECK(success_log_of(env, "log.full") == "1000|51|1050");
  }

  TEST_CASE("the shipped alert rules load and their unit tests pass (promtool)") {
    TestEnv env;
    const std::string dir = std::string(CLOCK_TEST_SCHEMA_DIR) + "/../prometheus/";
    Result rules = run(env.command({promtool(), "check", "rules", dir + "clock.rules.yml"}),
                       env.path("output"));
    CHECK_EXIT(rules, 0);
    Result tests = run(env.command({promtool(), "test", "rules", dir + "clock.rules.test.yml"}),
                       env.path("output"));
    INFO(tests.out << tests.err);
    CHECK_EXIT(tests, 0);
  }
}
