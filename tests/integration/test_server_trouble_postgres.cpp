// Server trouble on PostgreSQL only (docs/server-trouble.md; what both
// servers share is test_server_trouble.cpp): -n with the server down behind
// pgbouncer returns 69 instead of waiting in the pooler's queue; a full
// server makes a waiter wait; a release whose connection breaks is looked up
// and takes effect once. The outage tests stop the shared test server and
// bring it back before they return, whatever happened.
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "fault_tools.hpp"
#include "harness.hpp"
#include "postgres_tools.hpp"

using namespace clk::test;
using nlohmann::json;
using pg::psql;

namespace {

// A `clock -v run -w 30s -r job` that touches NAME.ran, its log in NAME.err
// (so the test can see that it met the trouble before the trouble ends).
std::unique_ptr<Process> waiter(const TestEnv& env, const std::string& name,
                                const std::map<std::string, std::string>& extra_env) {
  return env.spawn(env.shell_command("exec \"$T_CLOCK\" -v run -w 30s -r job -- touch \"$T_DIR/" +
                                         name + ".ran\" 2>\"$T_DIR/" + name + ".err\"",
                                     extra_env));
}

bool log_says(const TestEnv& env, const std::string& name, const std::string& words) {
  return read_file(env.path(name + ".err")).find(words) != std::string::npos;
}

}  // namespace

TEST_SUITE("server-trouble") {
  TEST_CASE(
      "-n behind pgbouncer with the server down exits 69 long before pgbouncer's "
      "query_wait_timeout, saying what failed" *
      doctest::timeout(300) * ::clk::test::only_on("postgres")) {
    TestEnv env;
    pg::ServerRestorer restorer(env);
    std::string url = pg::pgbouncer_url(env);
    if (url.empty()) {
      MESSAGE("skipped: CLOCK_TEST_PGBOUNCER_URL is not set (with-postgres.sh found no pgbouncer)");
      return;
    }
    std::map<std::string, std::string> through_bouncer = {{"CLOCK_DATABASE_URL", url}};
    REQUIRE_EXIT(env.clock({"init"}, through_bouncer), 0);
    REQUIRE_EXIT(pg::pg_ctl(env, {"stop", "-m", "fast"}), 0);

    // pgbouncer queues the query for query_wait_timeout (120 s by default):
    // without a deadline of its own, clock would wait that long.
    Result refused = env.clock({"acquire", "-n", "-r", "x"}, through_bouncer, 110s);
    MESSAGE("clock acquire -n behind pgbouncer, server down: exit " << refused.status << " after "
                                                                    << refused.seconds << " s");
    CHECK_FALSE(refused.timed_out);
    CHECK_EXIT(refused, 69);
    CHECK(refused.seconds < 60);  // far below query_wait_timeout; the bound is 5 s (-n)
    REQUIRE(refused.err_lines().size() == 1);
    CHECK(refused.err.find("PostgreSQL") != std::string::npos);
  }

  TEST_CASE(
      "a full server (too many connections for the role) makes clock run wait, then run, not "
      "exit 69" *
      doctest::timeout(300) * ::clk::test::only_on("postgres")) {
    TestEnv env;
    pg::install_roles(env);
    // A role of one connection (superusers ignore CONNECTION LIMIT): while
    // psql holds it, every login of clock gets SQLSTATE 53300.
    std::random_device random;
    const std::string role = "clock_test_full_" + std::to_string(random() % 1'000'000'000);
    REQUIRE_EXIT(
        psql(env, env.url(), "CREATE ROLE " + role + " LOGIN CONNECTION LIMIT 1 IN ROLE clock_app"),
        0);
    struct DropRole {
      const TestEnv& env;
      std::string role;
      ~DropRole() { psql(env, env.url(), "DROP ROLE IF EXISTS " + role); }
    } drop_role{env, role};
    std::map<std::string, std::string> as_role = {
        {"CLOCK_DATABASE_URL", env.url() + " user=" + role}};

    auto occupant = std::make_unique<pg::PsqlSession>(env, env.url() + " user=" + role);
    occupant->execute("SELECT 1");
    auto full = waiter(env, "full", as_role);
    REQUIRE(await([&] { return log_says(env, "full", "is full"); }, 30s, 50ms));
    CHECK(log_says(env, "full", "max_connections"));
    CHECK_FALSE(log_says(env, "full", "check that the server is up"));
    CHECK(full->running());
    CHECK(occupant->finish() == 0);  // the slot frees

    Result ran = full->wait(60s);
    INFO(read_file(env.path("full.err")));
    CHECK_EXIT(ran, 0);
    CHECK(fs::exists(env.path("full.ran")));
  }

  TEST_CASE(
      "a release whose reply is lost is looked up and takes effect once: clock run exits 0 and "
      "the lease is gone, not left to expire" *
      ::clk::test::only_on("postgres")) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);
    Result result =
        env.clock({"run", "-r", "job", "--", "true"}, {{"CLOCK_TEST_FAULT", "drop-reply:release"}});
    INFO(result.describe());
    if (result.err.find("test fault") == std::string::npos) {
      MESSAGE("skipped: this build has no test fault hooks (CMake option CLOCK_TEST_FAULTS=OFF)");
      return;
    }
    CHECK_EXIT(result, 0);
    // Known, not left in doubt: the only line is the fault's own.
    CHECK(result.err.find("unknown") == std::string::npos);
    CHECK(result.err_lines().size() == 1);
    CHECK(env.holders_of("job").empty());
    auto events = history_of(env, "job");
    REQUIRE_FALSE(events.empty());
    const std::string owner = events.front().at("owner");
    CHECK(event_names(events, owner) == std::vector<std::string>{"acquired", "released"});
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "job"}), 0);
  }

  TEST_CASE(
      "a release whose connection breaks before it is sent is sent again and takes effect once" *
      ::clk::test::only_on("postgres")) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);
    Result result = env.clock({"run", "-r", "job", "--", "true"},
                              {{"CLOCK_TEST_FAULT", "drop-request:release"}});
    INFO(result.describe());
    if (result.err.find("test fault") == std::string::npos) {
      MESSAGE("skipped: this build has no test fault hooks (CMake option CLOCK_TEST_FAULTS=OFF)");
      return;
    }
    CHECK_EXIT(result, 0);
    CHECK(env.holders_of("job").empty());
    auto events = history_of(env, "job");
    REQUIRE_FALSE(events.empty());
    const std::string owner = events.front().at("owner");
    CHECK(event_names(events, owner) == std::vector<std::string>{"acquired", "released"});
  }

  TEST_CASE("a nested run's release whose reply is lost undoes one re-entry, not two" *
            ::clk::test::only_on("postgres")) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);
    // The outer run holds job; the inner one re-enters (depth 2) and loses
    // its release's reply: the outer lease must stay, at depth 1.
    Result result = env.shell(
        "exec \"$T_CLOCK\" run -r job -- sh -c 'CLOCK_TEST_FAULT=drop-reply:release "
        "\"$T_CLOCK\" run -r job -- true && \"$T_CLOCK\" status --format json job > "
        "\"$T_DIR/inner.json\"'");
    INFO(result.describe());
    if (result.err.find("test fault") == std::string::npos) {
      MESSAGE("skipped: this build has no test fault hooks (CMake option CLOCK_TEST_FAULTS=OFF)");
      return;
    }
    CHECK_EXIT(result, 0);
    json inside = json::parse(read_file(env.path("inner.json")));
    REQUIRE(inside.at("holders").size() == 1);
    CHECK(inside.at("holders")[0].at("depth") == 1);
    CHECK(env.holders_of("job").empty());
  }
}
