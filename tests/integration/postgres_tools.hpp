// What the PostgreSQL tests need beyond the harness: a psql session driven
// statement by statement (so that a transaction stays open while clock runs),
// stopping and starting the shared test server (tests/helpers/pg-ctl.sh), the
// pgbouncer URL of a test's database.
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

#include "harness.hpp"

namespace clk::test::pg {

// True when the suite runs against PostgreSQL (CLOCK_TEST_BACKEND=postgres).
bool enabled();

// `dbname` of a libpq keyword string or postgresql:// URL ("" if none).
std::string dbname_of(const std::string& url);
// The same string naming database `dbname` instead.
std::string with_dbname(const std::string& url, const std::string& dbname);
// The test's database through pgbouncer (CLOCK_TEST_PGBOUNCER_URL); "" when
// no pgbouncer runs.
std::string pgbouncer_url(const TestEnv& env);

// A psql process whose stdin the test writes one step at a time; its stdout
// and stderr are read back. Killed (with its process group) when destroyed.
class PsqlSession {
 public:
  // psql -X -A -t -q -v ON_ERROR_STOP=1 -d `url`, with the test's environment.
  PsqlSession(const TestEnv& env, const std::string& url);
  ~PsqlSession();
  PsqlSession(const PsqlSession&) = delete;
  PsqlSession& operator=(const PsqlSession&) = delete;

  // Sends `sql` (adding a missing final semicolon) and waits until psql has
  // executed it; returns what psql printed for it (tuples only, unaligned, errors included). Throws
  // std::runtime_error, with everything psql printed, if psql exits first
  // (an error under ON_ERROR_STOP) or does not finish within `timeout`.
  std::string execute(const std::string& sql, milliseconds timeout = 30s);
  // Closes psql's stdin and returns its exit status (-1: killed after `timeout`).
  int finish(milliseconds timeout = 30s);

 private:
  std::string read_until(const std::string& marker, milliseconds timeout);
  pid_t m_pid = -1;
  int m_in = -1;   // our end of psql's stdin
  int m_out = -1;  // our end of psql's stdout and stderr
  bool m_exited = false;
  int m_counter = 0;
  std::string m_buffer;      // read but not yet returned
  std::string m_transcript;  // everything psql printed, for failure messages
};

// Decorates a TEST_CASE that needs the primary and synchronous standby of
// CLOCK_TEST_PG_STANDBY=1 tests/helpers/with-postgres.sh (CLOCK_TEST_PG_URL
// then names both): skipped, and counted as skipped, anywhere else.
doctest::skip only_with_standby();
// CLOCK_TEST_PG_PRIMARY_URL and CLOCK_TEST_PG_STANDBY_URL: each server alone
// (the test's database on it, when `env` is given).
std::string primary_url(const TestEnv* env = nullptr);
std::string standby_url(const TestEnv* env = nullptr);

// `psql -X -A -t -v ON_ERROR_STOP=1 -d URL -c SQL`, with the test's
// environment (`url` defaults to the test's database).
Result psql(const TestEnv& env, const std::string& url, const std::string& sql);
// The same command, to spawn.
Command psql_command(const TestEnv& env, const std::string& url, const std::string& sql);
Result psql(const TestEnv& env, const std::string& sql);

// `clock init`, then sql/postgres/roles.sql on the test's database: the
// schema and the clock_app / clock_operator group roles a login role joins.
// `psql_variables` go to psql as -v NAME=VALUE (without_release_1_0=1).
void install_roles(const TestEnv& env, const std::vector<std::string>& psql_variables = {});

// `tests/helpers/pg-ctl.sh ACTION [ARGS…]` on the server of with-postgres.sh
// (ACTION promote: its standby).
Result pg_ctl(const TestEnv& env, const std::vector<std::string>& args,
              milliseconds timeout = 120s);
// True when `psql -c 'select 1'` succeeds on the server (CLOCK_TEST_PG_URL).
bool server_answers(const TestEnv& env);

// Makes sure, when it goes out of scope, that the shared server is up again
// (starting it if it is down) and answers, even if the test failed halfway:
// the following tests use the same server. Declare it after the TestEnv, so
// that it runs first and the TestEnv can drop its database.
class ServerRestorer {
 public:
  explicit ServerRestorer(const TestEnv& env) : m_env(env) {}
  ~ServerRestorer();
  ServerRestorer(const ServerRestorer&) = delete;
  ServerRestorer& operator=(const ServerRestorer&) = delete;

 private:
  const TestEnv& m_env;
};

}  // namespace clk::test::pg
