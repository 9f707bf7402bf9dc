// The test server of the backend under test, whichever server it is: what a
// test of server trouble, written once for PostgreSQL and MariaDB, needs.
// Each server runs under its own helper (pg-ctl.sh, mariadb-ctl.sh); this
// picks the one of CLOCK_TEST_BACKEND.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "harness.hpp"

namespace clk::test::server {

// Decorates a TEST_CASE that applies to the SQL servers: skipped on SQLite.
doctest::skip only_on_servers();
// Whether the server under test is PostgreSQL (else MariaDB, or none).
bool on_postgres();

// One statement text per server's dialect.
struct Dialects {
  std::string postgres{};
  std::string mariadb{};
};

// The statements of this run's server on the test's database, as its
// superuser (psql -A -t, mariadb -N -B: rows only).
Result sql(const TestEnv& env, const Dialects& statements);
// That client command, to spawn.
Command sql_command(const TestEnv& env, const Dialects& statements);
// The first line of what they print; REQUIREs that they succeed.
std::string sql_value(const TestEnv& env, const Dialects& statements);
// This release's routine set, after clock init: its PostgreSQL schema
// ("clock_r…") or its MariaDB procedures' suffix ("_r…").
std::string routine_set(const TestEnv& env);
// The call of this release's `routine` (renew, release…) with `args`, as
// one statement of the server under test: SELECT schema.routine(args) or
// CALL clock_routine_suffix(args).
Dialects call(const TestEnv& env, const std::string& routine, const std::string& args);
// `items` as the literal of a routine's array argument on the server under
// test: '{a,b}' (PostgreSQL) or '["a", "b"]' (MariaDB), quotes included.
std::string array_of(const std::vector<std::string>& items);

// Stops the server (a fast, clean shutdown: clients see their connections
// closed, then refused) and starts it again (returning once it answers).
Result stop(const TestEnv& env);
Result start(const TestEnv& env);
bool answers(const TestEnv& env);

// Makes sure, when it goes out of scope, that the server is up again and
// answers, even if the test failed halfway. Declare it after the TestEnv.
class Restorer {
 public:
  explicit Restorer(const TestEnv& env) : m_env(env) {}
  ~Restorer();
  Restorer(const Restorer&) = delete;
  Restorer& operator=(const Restorer&) = delete;

 private:
  const TestEnv& m_env;
};

// roles.sql run again as a site does once no host runs v1.0.0
// (docs/upgrades.md): with without_release_1_0 set, so that the roles keep
// this release's routines and lose release 1.0's.
void retire_release_1_0(const TestEnv& env);

// A login of the backend under test in `role` of roles.sql (installed
// first: clock_app, clock_operator, clock_reader), with at most `limit`
// connections (0: no limit; a
// PostgreSQL role's CONNECTION LIMIT, a MariaDB account's
// MAX_USER_CONNECTIONS), dropped at the end. Its connections are counted on
// the server (pg_stat_activity, information_schema.processlist).
class AppLogin {
 public:
  AppLogin(const TestEnv& env, int limit, const std::string& role = "clock_app");
  ~AppLogin();
  AppLogin(const AppLogin&) = delete;
  AppLogin& operator=(const AppLogin&) = delete;

  // CLOCK_DATABASE_URL for this login.
  std::map<std::string, std::string> env() const;
  // How many client connections it has now.
  int connections() const;
  // The statements of this run's server, sent as this login.
  Result sql(const Dialects& statements) const;
  // That client command, to spawn.
  Command client_command(const Dialects& statements) const;
  const std::string& name() const { return m_name; }

 private:
  const TestEnv& m_env;
  std::string m_name;
};

}  // namespace clk::test::server
