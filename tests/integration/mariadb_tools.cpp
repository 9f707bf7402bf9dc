// The MariaDB tests' tools: see mariadb_tools.hpp.
#include "mariadb_tools.hpp"

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

#include "common_helpers.hpp"

extern char** environ;

namespace clk::test::maria {

namespace {

// Unique on the shared server: several test processes run at once.
std::string unique_name() {
  static std::atomic<int> counter{0};
  std::ostringstream out;
  out << "clock_t_" << getpid() << "_" << counter++ << "_" << std::hex
      << (std::random_device{}() & 0xffffff);
  return out.str();
}

// The server's root over its unix socket (with-mariadb.sh: unix_socket
// authentication, so no password), as the mariadb tests' scripts connect.
std::vector<std::string> client_as(const std::string& user, const std::string& database,
                                   const std::string& statements) {
  std::vector<std::string> argv = {"mariadb",
                                   "--protocol=socket",
                                   "--socket=" + getenv_or("CLOCK_TEST_MARIADB_SOCKET", ""),
                                   "-u" + user,
                                   "-N",
                                   "-B"};
  if (!database.empty())
    argv.push_back("--database=" + database);
  argv.push_back("-e");
  argv.push_back(statements);
  return argv;
}

std::vector<std::string> root_client(const std::string& database, const std::string& statements) {
  return client_as("root", database, statements);
}

// The runner's own environment: the backend exists before the test's does.
Result run_as_runner(const std::vector<std::string>& argv, const std::filesystem::path& dir) {
  Command command;
  command.argv = argv;
  for (char** entry = environ; *entry; ++entry) {
    std::string text = *entry;
    auto eq = text.find('=');
    if (eq != std::string::npos)
      command.env[text.substr(0, eq)] = text.substr(eq + 1);
  }
  return run(command, dir, 60s);
}

class MariadbBackend : public Backend {
 public:
  explicit MariadbBackend(const std::filesystem::path& dir) : m_database(dir) {}
  std::string name() const override { return "mariadb"; }
  std::string url() const override { return m_database.url(); }

 private:
  Database m_database;
};

}  // namespace

bool enabled() {
  return backend_name() == "mariadb";
}

bool server_available() {
  return !getenv_or("CLOCK_TEST_MARIADB_URL", "").empty();
}

std::string with_database(const std::string& url, const std::string& name) {
  auto authority = url.find("://");
  if (authority == std::string::npos)
    throw std::runtime_error("not a mariadb:// URL: " + url);
  authority += 3;
  auto query = url.find('?', authority);
  auto slash = url.find('/', authority);
  std::string tail = query == std::string::npos ? "" : url.substr(query);
  return url.substr(0, std::min({slash, query, url.size()})) + "/" + name + tail;
}

Database::Database(const std::filesystem::path& output_dir)
    : m_output_dir(output_dir), m_name(unique_name()) {
  std::string base = getenv_or("CLOCK_TEST_MARIADB_URL", "");
  if (base.empty())
    throw std::runtime_error("CLOCK_TEST_MARIADB_URL is not set (run under with-mariadb.sh)");
  m_url = with_database(base, m_name);
  Result created = run_as_runner(root_client("", "CREATE DATABASE `" + m_name + "`"), m_output_dir);
  if (created.status != 0) {
    throw std::runtime_error("cannot create the test database with the mariadb client:\n" +
                             created.describe());
  }
}

Database::~Database() {
  // A clock process left holding a transaction open would make DROP wait
  // for its metadata lock: a day by default, 20 s here.
  Result dropped = run_as_runner(
      root_client("",
                  "SET SESSION lock_wait_timeout = 20; DROP DATABASE IF EXISTS `" + m_name + "`"),
      m_output_dir);
  if (dropped.status != 0) {
    std::cerr << "warning: could not drop test database " << m_name << ":\n"
              << dropped.describe() << "\n";
  }
}

std::unique_ptr<Backend> make_backend(const std::filesystem::path& dir) {
  return std::make_unique<MariadbBackend>(dir);
}

// The test's database, from its URL (mariadb://root@localhost/NAME?socket=…).
std::string database_of(const TestEnv& env) {
  std::string database = env.url().substr(0, env.url().find('?'));
  return database.substr(database.rfind('/') + 1);
}

Result sql(const TestEnv& env, const std::string& statements) {
  return run(env.command(root_client(database_of(env), statements)), env.path("output"));
}

Command client_command(const TestEnv& env, const std::string& user, const std::string& statements) {
  return env.command(client_as(user, database_of(env), statements));
}

Result sql_as(const TestEnv& env, const std::string& user, const std::string& statements) {
  return run(client_command(env, user, statements), env.path("output"));
}

Result mariadb_ctl(const TestEnv& env, const std::string& action,
                   std::chrono::milliseconds timeout) {
  // The harness passes no CLOCK_* variable on: mariadb-ctl.sh needs these.
  std::map<std::string, std::string> extra;
  for (const char* name :
       {"CLOCK_TEST_MARIADB_DATA", "CLOCK_TEST_MARIADB_SOCKET", "CLOCK_TEST_MARIADB_RUN_AS",
        "CLOCK_TEST_MARIADB_DEFAULTS", "CLOCK_TEST_MARIADB_LOG", "CLOCK_TEST_MARIADB_PORT"}) {
    extra[name] = getenv_or(name, "");
  }
  return run(
      env.command({"bash", std::string(CLOCK_TEST_HELPERS_DIR) + "/mariadb-ctl.sh", action}, extra),
      env.path("output"), timeout);
}

bool server_answers(const TestEnv& env) {
  Result result = sql(env, "SELECT 1");
  return result.status == 0 && result.out.find('1') != std::string::npos;
}

}  // namespace clk::test::maria
