// What the integration tests need of the throwaway MariaDB server that
// tests/helpers/with-mariadb.sh starts: a database of their own on it (the
// mariadb backend's per-test database, and the differential test's third
// store), and the `mariadb` client on a test's database.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "harness.hpp"

namespace clk::test::maria {

// True when the suite runs against MariaDB (CLOCK_TEST_BACKEND=mariadb).
bool enabled();
// True when with-mariadb.sh runs a server (CLOCK_TEST_MARIADB_URL is set).
bool server_available();

// CLOCK_TEST_MARIADB_URL (mariadb://root@localhost/?socket=…) naming
// database `name` instead.
std::string with_database(const std::string& url, const std::string& name);

// A database of its own on the server, created with a unique name and
// dropped when this goes out of scope. `output_dir` receives the client's
// stdout and stderr files.
class Database {
 public:
  explicit Database(const std::filesystem::path& output_dir);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  const std::string& name() const { return m_name; }
  // mariadb://root@localhost/NAME?socket=…
  const std::string& url() const { return m_url; }

 private:
  std::filesystem::path m_output_dir;
  std::string m_name, m_url;
};

// The mariadb backend of the harness: one Database per test.
std::unique_ptr<Backend> make_backend(const std::filesystem::path& dir);

// The name of the test's database (from its URL).
std::string database_of(const TestEnv& env);

// `mariadb -N -B -e SQL` as the server's root on the test's database, with
// the test's environment (stdout: tab-separated rows, no header).
Result sql(const TestEnv& env, const std::string& statements);
// The same as the server's account `user` (no password).
Result sql_as(const TestEnv& env, const std::string& user, const std::string& statements);
// That client command, to spawn.
Command client_command(const TestEnv& env, const std::string& user, const std::string& statements);

// tests/helpers/mariadb-ctl.sh stop|start|restart on the server of
// with-mariadb.sh (a clean shutdown; start returns once it answers).
Result mariadb_ctl(const TestEnv& env, const std::string& action,
                   std::chrono::milliseconds timeout = std::chrono::seconds(120));
// True when the server answers `select 1` on the test's database.
bool server_answers(const TestEnv& env);

}  // namespace clk::test::maria
