// See server_tools.hpp.
#include "server_tools.hpp"

#include <iostream>
#include <random>

#include "mariadb_tools.hpp"
#include "postgres_tools.hpp"

namespace clk::test::server {

using namespace std::chrono_literals;

bool on_postgres() {
  return backend_name() == "postgres";
}

doctest::skip only_on_servers() {
  return doctest::skip(backend_name() != "postgres" && backend_name() != "mariadb");
}

Command sql_command(const TestEnv& env, const Dialects& statements) {
  return on_postgres() ? pg::psql_command(env, env.url(), statements.postgres)
                       : maria::client_command(env, "root", statements.mariadb);
}

Result sql(const TestEnv& env, const Dialects& statements) {
  return run(sql_command(env, statements), env.path("output"));
}

std::string sql_value(const TestEnv& env, const Dialects& statements) {
  Result result = sql(env, statements);
  INFO(result.describe());
  REQUIRE(result.status == 0);
  return result.out.substr(0, result.out.find('\n'));
}

std::string routine_set(const TestEnv& env) {
  std::string set =
      sql_value(env, {.postgres = "SELECT name FROM clock.routine_sets WHERE name <> 'clock'",
                      .mariadb = "SELECT suffix FROM routine_sets WHERE suffix <> '' LIMIT 1"});
  REQUIRE(!set.empty());
  return set;
}

Dialects call(const TestEnv& env, const std::string& routine, const std::string& args) {
  const std::string set = routine_set(env);
  if (on_postgres())
    return {.postgres = "SELECT " + set + "." + routine + "(" + args + ")"};
  return {.mariadb = "CALL clock_" + routine + set + "(" + args + ")"};
}

std::string array_of(const std::vector<std::string>& items) {
  std::string list;
  for (const auto& item : items) {
    if (on_postgres())
      list += (list.empty() ? "" : ",") + item;
    else
      list += std::string(list.empty() ? "" : ", ") + "\"" + item + "\"";
  }
  return on_postgres() ? "'{" + list + "}'" : "'[" + list + "]'";
}

Result stop(const TestEnv& env) {
  if (on_postgres())
    return pg::pg_ctl(env, {"stop", "-m", "fast"});
  return maria::mariadb_ctl(env, "stop");
}

Result start(const TestEnv& env) {
  if (on_postgres()) {
    Result started = pg::pg_ctl(env, {"start"});
    await([&] { return pg::server_answers(env); }, 60s, 100ms);
    return started;
  }
  return maria::mariadb_ctl(env, "start");
}

bool answers(const TestEnv& env) {
  return on_postgres() ? pg::server_answers(env) : maria::server_answers(env);
}

Restorer::~Restorer() {
  try {
    if (answers(m_env))
      return;
    std::cerr << "the " << backend_name() << " server is down after the test: starting it again\n";
    Result started = start(m_env);
    if (started.status != 0)
      std::cerr << "starting it failed:\n" << started.describe() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "could not restore the " << backend_name() << " server: " << e.what() << "\n";
  }
}

void retire_release_1_0(const TestEnv& env) {
  if (on_postgres()) {
    pg::install_roles(env, {"without_release_1_0=1"});
    return;
  }
  REQUIRE_EXIT(
      maria::sql(env, "SET @without_release_1_0 = 1;\nsource " +
                          std::string(CLOCK_TEST_HELPERS_DIR) + "/../../sql/mariadb/roles.sql"),
      0);
}

AppLogin::AppLogin(const TestEnv& env, int limit, const std::string& role) : m_env(env) {
  std::random_device random;
  m_name = "clock_test_login_" + std::to_string(random() % 1'000'000'000);
  const std::string budget = std::to_string(limit);
  if (on_postgres()) {
    pg::install_roles(env);
    REQUIRE_EXIT(pg::psql(env, "CREATE ROLE " + m_name + " LOGIN IN ROLE " + role +
                                   (limit > 0 ? " CONNECTION LIMIT " + budget : "")),
                 0);
    return;
  }
  REQUIRE_EXIT(env.clock({"init"}), 0);
  REQUIRE_EXIT(maria::sql(env, "source " + std::string(CLOCK_TEST_HELPERS_DIR) +
                                   "/../../sql/mariadb/roles.sql"),
               0);
  const std::string account = "'" + m_name + "'@'localhost'";
  REQUIRE_EXIT(maria::sql(env, "CREATE USER " + account +
                                   (limit > 0 ? " WITH MAX_USER_CONNECTIONS " + budget : "") +
                                   "; GRANT " + role + " TO " + account + "; SET DEFAULT ROLE " +
                                   role + " FOR " + account),
               0);
}

AppLogin::~AppLogin() {
  if (on_postgres()) {
    pg::psql(m_env, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '" +
                        m_name + "'");
    pg::psql(m_env, "DROP ROLE IF EXISTS " + m_name);
  } else {
    maria::sql(m_env, "DROP USER IF EXISTS '" + m_name + "'@'localhost'");
  }
}

std::map<std::string, std::string> AppLogin::env() const {
  if (on_postgres())
    return {{"CLOCK_DATABASE_URL", m_env.url() + " user=" + m_name}};
  std::string url = m_env.url();  // mariadb://root@localhost/NAME?socket=…
  url.replace(url.find("root@"), 4, m_name);
  return {{"CLOCK_DATABASE_URL", url}};
}

int AppLogin::connections() const {
  Result count =
      on_postgres()
          ? pg::psql(m_env, "SELECT count(*) FROM pg_stat_activity WHERE usename = '" + m_name +
                                "' AND backend_type = 'client backend'")
          : maria::sql(m_env, "SELECT count(*) FROM information_schema.processlist WHERE user = '" +
                                  m_name + "'");
  INFO(count.describe());
  REQUIRE(count.status == 0);
  return std::stoi(count.out);
}

Command AppLogin::client_command(const Dialects& statements) const {
  return on_postgres()
             ? pg::psql_command(m_env, m_env.url() + " user=" + m_name, statements.postgres)
             : maria::client_command(m_env, m_name, statements.mariadb);
}

Result AppLogin::sql(const Dialects& statements) const {
  return run(client_command(statements), m_env.path("output"));
}

}  // namespace clk::test::server
