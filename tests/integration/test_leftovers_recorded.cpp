// What a command leaves running is on the record (docs/whole-job.md): while
// --leftovers wait keeps the lock for them, `clock status` shows them on the
// lease; the release's history event names each with what became of it
// (waited for, or ended); only the owner, with its secret, may write them.
#include <algorithm>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "common_helpers.hpp"
#include "harness.hpp"
#include "postgres_tools.hpp"
#include "server_tools.hpp"

using namespace clk::test;

namespace {

// A command line for sh -c: starts `name`'s holding script (TestEnv::
// holding_script) in a session of its own, its pid in T_DIR/NAME.pid.
std::string straggler(const std::string& name) {
  return "setsid sh -c 'echo $$ > \"$T_DIR/" + name + ".pid.tmp\"; mv \"$T_DIR/" + name +
         ".pid.tmp\" \"$T_DIR/" + name + ".pid\"; exec sh \"$T_DIR/" + name +
         ".sh\"' </dev/null >/dev/null 2>&1 &\n";
}

long long pid_in(const TestEnv& env, const std::string& file) {
  std::string text;
  REQUIRE(await([&] { return !(text = read_file(env.path(file))).empty(); }, 30s));
  return std::stoll(text);
}

// The pids of a status holder's "leftovers", sorted.
std::vector<long long> leftover_pids(const nlohmann::json& holder) {
  std::vector<long long> pids;
  for (const auto& leftover : holder.at("leftovers"))
    pids.push_back(leftover.at("pid").get<long long>());
  std::sort(pids.begin(), pids.end());
  return pids;
}

// The newest history event of `kind` on `resource`.
nlohmann::json last_event(const TestEnv& env, const std::string& resource,
                          const std::string& kind) {
  Result listed = env.clock({"history", resource, "--event", kind, "--format", "json"});
  REQUIRE_EXIT(listed, 0);
  auto events = nlohmann::json::parse(listed.out).at("events");
  REQUIRE_FALSE(events.empty());
  return events.front();
}

}  // namespace

TEST_SUITE("run") {
  TEST_CASE(
      "with --leftovers wait, status shows the leftovers still running on the lease, and the "
      "release's history event names each as waited for") {
    TestEnv env;
    write_file(env.path("first.sh"), env.holding_script("first"));
    write_file(env.path("second.sh"), env.holding_script("second"));
    auto run = env.spawn(env.clock_command(
        {"run", "--leftovers", "wait", "-r", "x", "--", "sh", "-c",
         straggler("first") + straggler("second") +
             "while [ ! -e \"$T_DIR/first.started\" ] || [ ! -e \"$T_DIR/second.started\" ]; "
             "do sleep 0.01; done"}));
    REQUIRE(env.await_started("first"));
    REQUIRE(env.await_started("second"));
    const long long first = pid_in(env, "first.pid");
    const long long second = pid_in(env, "second.pid");
    const std::vector<long long> both = {std::min(first, second), std::max(first, second)};

    std::vector<long long> shown;
    bool listed = await(
        [&] {
          auto holders = env.holders_of("x");
          shown = holders.size() == 1 ? leftover_pids(holders[0]) : std::vector<long long>{};
          return shown == both;
        },
        10s);
    CHECK_MESSAGE(listed,
                  "status --format json never listed both leftovers: " << env.status().dump());
    auto holder = env.holders_of("x").at(0);
    for (const auto& leftover : holder.at("leftovers"))
      CHECK(contains(leftover.at("command").get<std::string>(), ".sh"));
    Result table = env.clock({"status"});
    CHECK(contains(table.out, "held (leftovers: "));
    CHECK(contains(table.out, std::to_string(first)));
    CHECK(contains(table.out, std::to_string(second)));

    // One exits: the lease shows the other only.
    env.let_go("first");
    bool updated = await(
        [&] {
          auto holders = env.holders_of("x");
          return holders.size() == 1 && leftover_pids(holders[0]) == std::vector<long long>{second};
        },
        10s);
    CHECK_MESSAGE(updated, "status did not drop the leftover that exited: " << env.status().dump());
    CHECK(run->running());

    env.let_go("second");
    CHECK_EXIT(run->wait(30s), 0);
    CHECK(env.holders_of("x").empty());

    auto released = last_event(env, "x", "released");
    std::vector<long long> named;
    for (const auto& leftover : released.at("leftovers")) {
      named.push_back(leftover.at("pid").get<long long>());
      CHECK(leftover.at("fate") == "waited");
    }
    std::sort(named.begin(), named.end());
    CHECK(named == both);
    Result history = env.clock({"history", "x", "--event", "released"});
    CHECK(contains(history.out, std::to_string(first) + " waited for"));
  }

  TEST_CASE(
      "by default the release's history event names the leftovers clock ended, and status "
      "never showed leftovers for them") {
    TestEnv env;
    Result ran = env.clock(
        {"run", "-r", "x", "--", "sh", "-c",
         "setsid sh -c 'echo $$ > \"$T_DIR/left.pid\"; exec sleep 999' </dev/null >/dev/null "
         "2>&1 &\n"
         // Until it runs sleep: the history names what was running at the end.
         "until [ \"$(cat /proc/$(cat \"$T_DIR/left.pid\")/comm 2>/dev/null)\" = sleep ]; do "
         "sleep 0.01; done\n"
         "exit 3"});
    CHECK_EXIT(ran, 3);
    const long long left = pid_in(env, "left.pid");
    CHECK_FALSE(process_alive(static_cast<pid_t>(left)));
    auto released = last_event(env, "x", "released");
    REQUIRE(released.at("leftovers").size() == 1);
    CHECK(released.at("leftovers")[0].at("pid") == left);
    CHECK(released.at("leftovers")[0].at("command") == "sleep 999");
    CHECK(released.at("leftovers")[0].at("fate") == "ended");
    Result history = env.clock({"history", "x"});
    CHECK(contains(history.out, "released (exit 3) (left " + std::to_string(left) + " ended)"));
    // A run that left nothing names nothing.
    CHECK_EXIT(env.clock({"run", "-r", "y", "--", "true"}), 0);
    CHECK(last_event(env, "y", "released").at("leftovers").empty());
  }

  TEST_CASE(
      "the leftovers of a lease are written only with its owner's secret: the owner id alone, "
      "as status shows it, is refused and changes nothing" *
      server::only_on_servers()) {
    // On SQLite whoever may write the file may write any row: the store's
    // check (the same as renew's) is not reachable from outside clock.
    TestEnv env;
    Acquired held = env.acquire({"-r", "x"});
    const std::string id = held.credential.substr(0, held.credential.find('.'));
    const std::string secret = secret_of(held.credential);
    const std::string set = server::routine_set(env);
    const std::string forged_list =
        "[{\"pid\": 4242, \"command\": \"forged\", \"fate\": \"running\"}]";
    auto note = [&](const std::string& with_secret) {
      return server::sql(env, {.postgres = "SELECT " + set + ".note_leftovers('', ARRAY['x'], '" +
                                           id + "', '{}'::bigint[], '" + forged_list +
                                           "'::jsonb, '" + with_secret + "', 'tester@test pid 1')",
                               .mariadb = "CALL clock_note_leftovers" + set + "('', '[\"x\"]', '" +
                                          id + "', '[]', '" + forged_list + "', '" + with_secret +
                                          "', 'tester@test pid 1')"});
    };
    Result forged = note("not-the-secret");
    REQUIRE_EXIT(forged, 0);
    CHECK(contains(forged.out, "not_owner"));
    CHECK(contains(forged.out, "not_proven"));
    CHECK(env.holders_of("x").at(0).at("leftovers").empty());
    CHECK(last_event(env, "x", "refused").at("by") == "tester@test pid 1");

    // The same call with the secret is what the holder does: it is shown.
    Result proven = note(secret);
    REQUIRE_EXIT(proven, 0);
    CHECK(contains(proven.out, "noted"));
    auto shown = env.holders_of("x").at(0).at("leftovers");
    REQUIRE(shown.size() == 1);
    CHECK(shown[0].at("pid") == 4242);
    CHECK(shown[0].at("command") == "forged");
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", held.credential}), 0);
    CHECK(last_event(env, "x", "released").at("leftovers").size() == 1);
  }

  TEST_CASE(
      "a release's set of functions lets every role that may renew in an older set record "
      "leftovers, without roles.sql being run again" *
      only_on("postgres")) {
    TestEnv env;
    pg::install_roles(env);
    // As a release before migration 015 left clock_app: renew in the schema
    // (release 1.0's functions), no note_leftovers; and no set of this
    // release's yet (docs/upgrades.md).
    const std::string set =
        pg::psql(env, "SELECT name FROM clock.routine_sets WHERE name <> 'clock'").out;
    REQUIRE(set.starts_with("clock_r"));
    const std::string set_name = set.substr(0, set.size() - 1);
    REQUIRE_EXIT(pg::psql(env,
                          "REVOKE EXECUTE ON FUNCTION clock.note_leftovers(text, text[], "
                          "uuid, bigint[], jsonb, text, text) FROM clock_app; DROP SCHEMA " +
                              set_name + " CASCADE; DELETE FROM clock.routine_sets WHERE name = '" +
                              set_name + "'"),
                 0);
    CHECK_EXIT(env.clock({"history"}), 0);  // the first use installs this release's set
    Result after = pg::psql(env, "SELECT has_function_privilege('clock_app', '" + set_name +
                                     ".note_leftovers(text, text[], uuid, bigint[], jsonb, text, "
                                     "text)', 'EXECUTE')");
    CHECK(after.out == "t\n");
  }

  TEST_CASE("a version 8 SQLite database upgrades in place: its live lease intact, then noted" *
            only_on("sqlite")) {
    TestEnv env;
    const std::string db = env.url().substr(std::string("sqlite:").size());
    Acquired held = env.acquire({"-r", "held", "--ttl", "1h"});
    // Back to version 8: drop what 009 and later made (010 and 014 remade the success log's
    // triggers: 010's are put back, as 008's differ only in conflict handling); it migrates to
    // the latest.
    const std::string migrations = std::string(CLOCK_TEST_SQL_DIR) + "/sqlite/migrations/";
    REQUIRE_EXIT(env.shell("sqlite3 \"$DB\" 'ALTER TABLE leases DROP COLUMN leftovers; "
                           "ALTER TABLE history DROP COLUMN leftovers; "
                           "ALTER TABLE history DROP COLUMN exit_code; "
                           "ALTER TABLE history DROP COLUMN exit_signal; DROP TABLE run_results; "
                           "DROP TABLE period_changes; "
                           "ALTER TABLE leases DROP COLUMN holder_boot_id; "
                           "ALTER TABLE leases DROP COLUMN holder_pid_ns; "
                           "ALTER TABLE leases DROP COLUMN holder_pid_start; "
                           "ALTER TABLE leases DROP COLUMN job_group; "
                           "ALTER TABLE leases DROP COLUMN job_cgroup; "
                           "DROP TRIGGER successes_pruned_in_steps; "
                           "DROP TRIGGER last_success_logs_insert; "
                           "DROP TRIGGER last_success_logs_update; "
                           "ALTER TABLE successes DROP COLUMN ordinal; "
                           "PRAGMA user_version = 8' && "
                           "sed -n '/^CREATE TRIGGER/,$p' \"$M\"010_*.sql | sqlite3 \"$DB\"",
                           {{"DB", db}, {"M", migrations}}),
                 0);
    auto holders = env.holders_of("held");  // migrates
    REQUIRE(holders.size() == 1);
    CHECK(holders[0].at("token") == held.token());
    CHECK(holders[0].at("leftovers").empty());
    CHECK(env.shell("sqlite3 \"$DB\" 'PRAGMA user_version'", {{"DB", db}}).out == "14\n");
    CHECK_EXIT(env.clock({"release", "-r", "held", "--owner", held.credential}), 0);
  }

  TEST_CASE(
      "the config file's lock.leftovers sets the default, --leftovers overrides it, and a bad "
      "value is a configuration error naming the key") {
    TestEnv env;
    write_file(env.path("wait.toml"), "[lock]\nleftovers = \"wait\"\n");
    const std::string config = env.path("wait.toml").string();
    // A leftover that exits by itself a moment later: awaited (history says
    // waited) under the file's "wait", ended under --leftovers kill. It is one
    // process for all its life (setsid execs sleep): a shell that forked its
    // sleep would leave the sleep as a second root for the moment between the
    // shell's death by SIGTERM and its own.
    auto leaving = [&](const std::vector<std::string>& flags) {
      std::vector<std::string> args = {"--config", config, "run", "-r", "x"};
      args.insert(args.end(), flags.begin(), flags.end());
      args.insert(args.end(), {"--", "sh", "-c", "setsid sleep 0.3 </dev/null >/dev/null 2>&1 &"});
      CHECK_EXIT(env.clock(args), 0);
      auto left = last_event(env, "x", "released").at("leftovers");
      REQUIRE(left.size() == 1);
      return left[0].at("fate").get<std::string>();
    };
    CHECK(leaving({}) == "waited");
    CHECK(leaving({"--leftovers", "kill"}) == "ended");

    Result shown = env.clock({"--config", config, "config"});
    CHECK(contains(shown.out, "lock.leftovers"));
    CHECK(contains(shown.out, "wait"));

    write_file(env.path("bad.toml"), "[lock]\nleftovers = \"keep\"\n");
    Result bad =
        env.clock({"--config", env.path("bad.toml").string(), "run", "-r", "x", "--", "true"});
    CHECK_EXIT(bad, 78);
    CHECK(bad.err_lines().size() == 1);
    CHECK(contains(bad.err, "lock.leftovers"));
  }
}
