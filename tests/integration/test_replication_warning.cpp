// The asynchronous-standby warning of clock init and clock status -v (docs/high-availability.md):
// a server that streams to asynchronous
// standbys only can lose a grant at a failover and hand the same token out
// again. Runs under CLOCK_TEST_PG_STANDBY=1 tests/helpers/with-postgres.sh
// (ctest: replication-postgres), whose standby is synchronous; a test makes
// it asynchronous by clearing the primary's synchronous_standby_names, and
// restores it after.
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "harness.hpp"
#include "postgres_tools.hpp"

using namespace clk::test;

namespace {

const std::string k_warning = "streams to asynchronous standbys only";

// `psql -c SQL` on `url`, with the test's environment; must succeed.
std::string psql_output(const TestEnv& env, const std::string& url, const std::string& sql) {
  Result result =
      run(env.command({"psql", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql}),
          env.path("output"));
  INFO(result.describe());
  REQUIRE(result.status == 0);
  return result.out;
}

// The standby's sync_state as the primary reports it.
std::string sync_state(const TestEnv& env) {
  std::string out =
      psql_output(env, pg::primary_url(),
                  "SELECT sync_state FROM pg_stat_replication WHERE state = 'streaming'");
  return out.substr(0, out.find('\n'));
}

// Sets the primary's synchronous_standby_names and waits until the standby's
// sync_state follows.
void set_standby_names(const TestEnv& env, const std::string& names,
                       const std::string& expected_state) {
  psql_output(env, pg::primary_url(),
              "ALTER SYSTEM SET synchronous_standby_names = '" + names + "'");
  psql_output(env, pg::primary_url(), "SELECT pg_reload_conf()");
  REQUIRE(await([&] { return sync_state(env) == expected_state; }, 30s, 50ms));
}

// Makes the standby asynchronous while it lives, synchronous again after.
class AsynchronousStandby {
 public:
  explicit AsynchronousStandby(const TestEnv& env) : m_env(env) {
    set_standby_names(env, "", "async");
  }
  ~AsynchronousStandby() {
    psql_output(m_env, pg::primary_url(), "ALTER SYSTEM RESET synchronous_standby_names");
    psql_output(m_env, pg::primary_url(), "SELECT pg_reload_conf()");
    await([&] { return sync_state(m_env) == "sync"; }, 30s, 50ms);
  }
  AsynchronousStandby(const AsynchronousStandby&) = delete;
  AsynchronousStandby& operator=(const AsynchronousStandby&) = delete;

 private:
  const TestEnv& m_env;
};

int warnings_in(const Result& result) {
  int count = 0;
  for (const auto& line : result.err_lines()) {
    if (line.find(k_warning) != std::string::npos)
      ++count;
  }
  return count;
}

}  // namespace

TEST_SUITE("replication") {
  TEST_CASE("with a synchronous standby, clock init and clock status -v warn of nothing" *
            pg::only_with_standby()) {
    TestEnv env;
    REQUIRE(sync_state(env) == "sync");
    Result init = env.clock({"init"});
    CHECK_EXIT(init, 0);
    CHECK(init.err.empty());
    Result status = env.clock({"status", "-v"});
    CHECK_EXIT(status, 1);  // nothing held
    CHECK(warnings_in(status) == 0);
  }

  TEST_CASE(
      "with asynchronous standbys only, clock init and clock status -v say so in one line on "
      "stderr, what it risks and what to set, and exit as they would" *
      pg::only_with_standby()) {
    TestEnv env;
    AsynchronousStandby asynchronous(env);
    Result init = env.clock({"init"});
    CHECK_EXIT(init, 0);
    CHECK(init.out.find("the clock schema in ") != std::string::npos);  // its one line
    CHECK(init.err_lines().size() == 1);
    CHECK(warnings_in(init) == 1);
    CHECK(init.err.find("granted again") != std::string::npos);
    CHECK(init.err.find("synchronous_standby_names") != std::string::npos);

    Result status = env.clock({"status", "-v"});
    CHECK_EXIT(status, 1);  // nothing held: the warning does not change it
    CHECK(warnings_in(status) == 1);
    env.acquire({"-r", "held"});
    status = env.clock({"status", "-v"});
    CHECK_EXIT(status, 0);
    CHECK(warnings_in(status) == 1);
    // Without -v, status stays quiet: it is what scripts and cron call.
    Result quiet = env.clock({"status"});
    CHECK_EXIT(quiet, 0);
    CHECK(quiet.err.empty());
  }

  TEST_CASE(
      "a role that may not see the standbys' sync state (no pg_monitor) gets no warning and no "
      "error" *
      pg::only_with_standby()) {
    TestEnv env;
    AsynchronousStandby asynchronous(env);
    std::random_device random;
    const std::string role = "clock_test_plain_" + std::to_string(random() % 1'000'000'000);
    const std::string dbname = pg::dbname_of(env.url());
    psql_output(
        env, env.url(),
        "CREATE ROLE " + role + " LOGIN; GRANT CREATE ON DATABASE \"" + dbname + "\" TO " + role);
    const std::map<std::string, std::string> as_role = {
        {"CLOCK_DATABASE_URL", env.url() + " user=" + role}};
    Result init = env.clock({"init"}, as_role);
    Result status = env.clock({"status", "-v"}, as_role);
    // Its schema, privileges and the role go before the database does.
    psql_output(env, env.url(), "DROP OWNED BY " + role);
    psql_output(env, env.url(), "DROP ROLE " + role);
    CHECK_EXIT(init, 0);
    CHECK(init.err.empty());
    CHECK_EXIT(status, 1);
    CHECK(warnings_in(status) == 0);
  }
}
