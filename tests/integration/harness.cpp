// The integration harness: process spawning and waiting, polling, per-test
// directories and databases. See harness.hpp.
#include "harness.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <fstream>
#include <iostream>
#include <random>
#include <regex>
#include <signal.h>
#include <spawn.h>
#include <sstream>
#include <stdexcept>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <doctest/doctest.h>

#include "common_helpers.hpp"
#include "mariadb_tools.hpp"

extern char** environ;

namespace clk::test {

namespace {

// Set when an assertion of the running test case fails, so that TestEnv keeps
// the test's directory for inspection.
std::atomic<bool> g_test_failed{false};

struct FailureListener : doctest::IReporter {
  explicit FailureListener(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override { g_test_failed = false; }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override { g_test_failed = true; }
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData& data) override {
    if (data.m_failed)
      g_test_failed = true;
  }
  void log_message(const doctest::MessageData& data) override {
    if (!(data.m_severity & doctest::assertType::is_warn))
      g_test_failed = true;
  }
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

}  // namespace
}  // namespace clk::test

DOCTEST_REGISTER_LISTENER("clock-keep-failed-dirs", 1, clk::test::FailureListener);

namespace clk::test {

namespace {

[[noreturn]] void fail_errno(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

// argv[0] as given if it holds a slash, else the first match in `path_list`.
std::string resolve_program(const std::string& program, const std::string& path_list) {
  if (program.find('/') != std::string::npos)
    return program;
  std::stringstream dirs(path_list);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty())
      dir = ".";
    std::string candidate = dir + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  throw std::runtime_error("program not found in PATH: " + program);
}

std::string truncated(const std::string& text, std::size_t limit = 3000) {
  if (text.size() <= limit)
    return text;
  return text.substr(0, limit) + "… (" + std::to_string(text.size() - limit) + " more bytes)";
}

std::string unique_suffix() {
  static std::atomic<int> counter{0};
  std::random_device device;
  std::ostringstream out;
  out << getpid() << "_" << counter++ << "_" << std::hex << (device() & 0xffffff);
  return out.str();
}

fs::path executable_dir() {
  std::error_code error;
  fs::path self = fs::read_symlink("/proc/self/exe", error);
  return error ? fs::current_path() : self.parent_path();
}

}  // namespace

// ---------------------------------------------------------------- Result

std::vector<std::string> Result::err_lines() const {
  std::vector<std::string> lines;
  std::stringstream in(err);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty())
      lines.push_back(line);
  }
  return lines;
}

std::string Result::describe() const {
  std::ostringstream text;
  text << "pid " << pid << " exited with status " << status;
  if (signaled)
    text << " (killed by signal " << status - 128 << ")";
  if (timed_out)
    text << " (TIMED OUT, killed by the harness)";
  text << " after " << seconds << "s\n--- stdout:\n"
       << truncated(out) << "\n--- stderr:\n"
       << truncated(err) << "\n---";
  return text.str();
}

// ---------------------------------------------------------------- Process

Process::Process(const Command& command, const fs::path& output_dir) {
  static std::atomic<int> counter{0};
  int n = counter++;
  m_out_path = output_dir / (std::to_string(n) + ".out");
  m_err_path = output_dir / (std::to_string(n) + ".err");
  fs::path in_path = "/dev/null";
  if (command.stdin_text) {
    in_path = output_dir / (std::to_string(n) + ".in");
    write_file(in_path, *command.stdin_text);
  }

  auto path_entry = command.env.find("PATH");
  std::string program = resolve_program(
      command.argv.at(0), path_entry != command.env.end() ? path_entry->second : "/usr/bin:/bin");

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, in_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, m_out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, m_err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);

  // Its own process group (so a timeout can kill everything it started), an
  // empty signal mask and default dispositions, whatever the runner has.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &all);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setflags(&attributes,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> argv;
  for (const auto& arg : command.argv)
    argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (const auto& [key, value] : command.env)
    env_strings.push_back(key + "=" + value);
  std::vector<char*> envp;
  for (auto& entry : env_strings)
    envp.push_back(entry.data());
  envp.push_back(nullptr);

  m_started = Clock::now();
  int error = posix_spawn(&m_pid, program.c_str(), &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (error != 0) {
    errno = error;
    fail_errno("cannot spawn " + program);
  }
}

Process::~Process() {
  if (m_pid > 0 && !m_exited) {
    kill(-m_pid, SIGKILL);
    kill(m_pid, SIGKILL);
    int status = 0;
    waitpid(m_pid, &status, 0);
  }
}

void Process::reap(int wait_status) {
  m_exited = true;
  m_wait_status = wait_status;
}

bool Process::running() {
  if (m_exited)
    return false;
  int status = 0;
  pid_t r = waitpid(m_pid, &status, WNOHANG);
  if (r == m_pid)
    reap(status);
  return !m_exited;
}

void Process::signal(int signal_number) {
  if (!m_exited)
    kill(m_pid, signal_number);
}

Result Process::wait(milliseconds timeout) {
  Result result;
  result.pid = m_pid;
  // From now, not from the start: a holder spawned long ago and told to
  // finish gets the whole `timeout` to do so.
  auto deadline = Clock::now() + timeout;
  auto interval = 1ms;
  while (running()) {
    if (Clock::now() >= deadline) {
      result.timed_out = true;
      kill(-m_pid, SIGKILL);
      kill(m_pid, SIGKILL);
      int status = 0;
      if (waitpid(m_pid, &status, 0) == m_pid)
        reap(status);
      break;
    }
    std::this_thread::sleep_for(interval);
    interval = std::min<milliseconds>(interval * 2, 10ms);
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - m_started).count();
  if (WIFEXITED(m_wait_status)) {
    result.status = WEXITSTATUS(m_wait_status);
  } else if (WIFSIGNALED(m_wait_status)) {
    result.signaled = true;
    result.status = 128 + WTERMSIG(m_wait_status);
  }
  result.out = read_file(m_out_path);
  result.err = read_file(m_err_path);
  return result;
}

Result run(const Command& command, const fs::path& output_dir, milliseconds timeout) {
  Process process(command, output_dir);
  return process.wait(timeout);
}

std::vector<Result> run_all(const std::vector<Command>& commands, const fs::path& output_dir,
                            milliseconds timeout) {
  std::vector<std::unique_ptr<Process>> processes;
  for (const auto& command : commands) {
    processes.push_back(std::make_unique<Process>(command, output_dir));
  }
  auto deadline = Clock::now() + timeout;
  std::vector<Result> results;
  for (auto& process : processes) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    results.push_back(process->wait(std::max(left, milliseconds(0))));
  }
  return results;
}

// ---------------------------------------------------------------- utilities

bool await(const std::function<bool()>& condition, milliseconds timeout, milliseconds interval) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    if (condition())
      return true;
    if (Clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(interval);
  }
}

bool process_alive(pid_t pid) {
  if (pid <= 0)
    return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat)
    return false;
  std::string text;
  try {
    text.assign(std::istreambuf_iterator<char>(stat), std::istreambuf_iterator<char>());
  } catch (const std::ios_base::failure&) {
    return false;  // it exited between the open and the read (ESRCH)
  }
  auto paren = text.rfind(')');
  if (paren == std::string::npos || paren + 2 >= text.size())
    return false;
  char state = text[paren + 2];
  return state != 'Z' && state != 'X' && state != 'x';
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out)
    throw std::runtime_error("cannot write " + path.string());
}

std::map<std::string, long long> runs_total(const std::string& exposition) {
  static const std::regex sample(
      R"re(clock_runs_total\{namespace="([^"]*)",resource="([^"]*)",outcome="([^"]*)"\} (\d+))re");
  std::map<std::string, long long> counts;
  for (std::sregex_iterator it(exposition.begin(), exposition.end(), sample), end; it != end; ++it)
    counts[(*it)[1].str() + "/" + (*it)[2].str() + "/" + (*it)[3].str()] = std::stoll((*it)[4]);
  return counts;
}

bool is_uuid(const std::string& text) {
  static const std::regex pattern(
      "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$");
  return std::regex_match(text, pattern);
}

std::string host_name() {
  char buffer[256] = {};
  gethostname(buffer, sizeof buffer - 1);
  return buffer;
}

std::string random_uuid() {
  std::random_device device;
  std::mt19937_64 generator((static_cast<std::uint64_t>(device()) << 32) ^ device());
  std::uniform_int_distribution<int> digit(0, 15);
  const char* hex = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 32; ++i) {
    if (i == 8 || i == 12 || i == 16 || i == 20)
      out += '-';
    if (i == 12) {
      out += '4';  // version 4
    } else if (i == 16) {
      out += hex[8 + digit(generator) % 4];  // variant 10xx
    } else {
      out += hex[digit(generator)];
    }
  }
  return out;
}

std::string random_owner() {
  std::string secret = random_uuid() + random_uuid();
  std::erase(secret, '-');
  return random_uuid() + "." + secret;
}

std::string id_of(const std::string& credential) {
  return credential.substr(0, credential.find('.'));
}

std::string secret_of(const std::string& credential) {
  return credential.substr(credential.find('.') + 1);
}

Acquired parse_acquired_shell(const std::string& exports) {
  static const std::regex pattern(
      R"(^export CLOCK_OWNER=([0-9a-f-]{36})\.([0-9a-f]{32,128}) CLOCK_TOKEN=([0-9,]+)\n$)");
  std::smatch match;
  if (!std::regex_match(exports, match, pattern))
    throw std::runtime_error("not the exports of acquire --format shell: " + exports);
  Acquired acquired;
  acquired.owner = match[1];
  acquired.credential = match[1].str() + "." + match[2].str();
  std::string tokens = match[3];
  for (std::size_t at = 0; at < tokens.size();) {
    auto comma = tokens.find(',', at);
    if (comma == std::string::npos)
      comma = tokens.size();
    acquired.tokens.push_back(std::stoll(tokens.substr(at, comma - at)));
    at = comma + 1;
  }
  return acquired;
}

Acquired parse_acquired(const std::string& json_text) {
  auto json = nlohmann::json::parse(json_text);
  Acquired acquired;
  acquired.owner = json.at("owner").get<std::string>();
  auto add_token = [&](const nlohmann::json& item) {
    if (item.is_number_integer()) {
      acquired.tokens.push_back(item.get<long long>());
    } else if (item.is_object() && item.contains("token")) {
      acquired.tokens.push_back(item.at("token").get<long long>());
    } else if (item.is_string()) {
      acquired.tokens.push_back(std::stoll(item.get<std::string>()));
    }
  };
  for (const char* key : {"tokens", "grants"}) {
    if (!json.contains(key))
      continue;
    for (const auto& item : json.at(key))
      add_token(item);  // an array or an object
  }
  if (acquired.tokens.empty() && json.contains("token"))
    add_token(json.at("token"));
  if (acquired.tokens.empty())
    throw std::runtime_error("no token in: " + json_text);
  return acquired;
}

// ---------------------------------------------------------------- backends

namespace {

// The file is clock.db in the test's folder, or in CLOCK_TEST_SQLITE_DIR
// where that is set: make screenshot sets /var/lib/clock (a tmpfs in a mount
// namespace of its own), so that the picture names the packaged path rather
// than a scratch folder. One test at a time then: they would share the file.
class SqliteBackend : public Backend {
 public:
  explicit SqliteBackend(const fs::path& dir)
      : m_url("sqlite:" +
              (fs::path(getenv_or("CLOCK_TEST_SQLITE_DIR", dir.string())) / "clock.db").string()) {}
  std::string name() const override { return "sqlite"; }
  std::string url() const override { return m_url; }

 private:
  std::string m_url;
};

// A libpq keyword string or URI with its database name replaced by `dbname`.
std::string with_dbname(const std::string& base, const std::string& dbname) {
  if (base.rfind("postgres://", 0) == 0 || base.rfind("postgresql://", 0) == 0) {
    auto authority = base.find("://") + 3;
    auto query = base.find('?', authority);
    auto slash = base.find('/', authority);
    std::string tail = query == std::string::npos ? "" : base.substr(query);
    std::string head = base.substr(0, std::min({slash, query, base.size()}));
    return head + "/" + dbname + tail;
  }
  // Keyword string: drop any dbname=… (value possibly 'quoted'), append ours.
  std::string out;
  std::size_t i = 0;
  while (i < base.size()) {
    while (i < base.size() && std::isspace(static_cast<unsigned char>(base[i])))
      ++i;
    std::size_t start = i;
    while (i < base.size() && base[i] != '=' &&
           !std::isspace(static_cast<unsigned char>(base[i]))) {
      ++i;
    }
    std::string key = base.substr(start, i - start);
    while (i < base.size() && std::isspace(static_cast<unsigned char>(base[i])))
      ++i;
    if (i < base.size() && base[i] == '=')
      ++i;
    while (i < base.size() && std::isspace(static_cast<unsigned char>(base[i])))
      ++i;
    if (i < base.size() && base[i] == '\'') {
      ++i;
      while (i < base.size() && base[i] != '\'')
        i += base[i] == '\\' ? 2 : 1;
      ++i;
    } else {
      while (i < base.size() && !std::isspace(static_cast<unsigned char>(base[i])))
        ++i;
    }
    if (!key.empty() && key != "dbname") {
      out += base.substr(start, std::min(i, base.size()) - start) + " ";
    }
  }
  return out + "dbname=" + dbname;
}

class PostgresBackend : public Backend {
 public:
  explicit PostgresBackend(const fs::path& dir) : m_dir(dir) {
    m_base = getenv_or("CLOCK_TEST_PG_URL", "");
    if (m_base.empty())
      throw std::runtime_error("CLOCK_TEST_PG_URL is not set");
    m_dbname = "clock_t_" + unique_suffix();
    m_url = with_dbname(m_base, m_dbname);
    Result created = psql("CREATE DATABASE \"" + m_dbname + "\"");
    if (created.status != 0) {
      throw std::runtime_error("cannot create the test database with psql:\n" + created.describe());
    }
  }
  ~PostgresBackend() override {
    Result dropped = psql("DROP DATABASE IF EXISTS \"" + m_dbname + "\" WITH (FORCE)");
    if (dropped.status != 0) {
      std::cerr << "warning: could not drop test database " << m_dbname << ":\n"
                << dropped.describe() << "\n";
    }
  }
  std::string name() const override { return "postgres"; }
  std::string url() const override { return m_url; }

 private:
  Result psql(const std::string& sql) const {
    Command command;
    command.argv = {"psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", m_base, "-c", sql};
    for (char** entry = environ; *entry; ++entry) {
      std::string text = *entry;
      auto eq = text.find('=');
      if (eq != std::string::npos)
        command.env[text.substr(0, eq)] = text.substr(eq + 1);
    }
    return run(command, m_dir, 60s);
  }

  fs::path m_dir;
  std::string m_base, m_dbname, m_url;
};

}  // namespace

std::string backend_name() {
  return getenv_or("CLOCK_TEST_BACKEND", "sqlite");
}

namespace {
std::vector<std::string>& reasons() {
  static std::vector<std::string> list;
  return list;
}
}  // namespace

doctest::skip not_on(const std::string& backend, const std::string& reason) {
  bool skipped = backend_name() == backend;
  if (skipped)
    reasons().push_back(reason);
  return doctest::skip(skipped);
}

const std::vector<std::string>& skip_reasons() {
  return reasons();
}

std::unique_ptr<Backend> make_backend(const fs::path& dir) {
  std::string name = backend_name();
  if (name == "sqlite")
    return std::make_unique<SqliteBackend>(dir);
  if (name == "postgres")
    return std::make_unique<PostgresBackend>(dir);
  if (name == "mariadb")
    return maria::make_backend(dir);
  throw std::runtime_error("unknown CLOCK_TEST_BACKEND: " + name +
                           " (use sqlite, postgres or mariadb)");
}

// ---------------------------------------------------------------- TestEnv

TestEnv::TestEnv() {
  std::string pattern = (fs::path(getenv_or("TMPDIR", "/tmp")) / "clock-it-XXXXXX").string();
  if (!mkdtemp(pattern.data()))
    fail_errno("mkdtemp " + pattern);
  m_dir = pattern;
  for (const char* sub : {"home", "xdg-config", "xdg-state", "xdg-cache", "tmp", "output"}) {
    fs::create_directories(m_dir / sub);
  }
  fs::create_directories(m_dir / "xdg-runtime");
  fs::permissions(m_dir / "xdg-runtime", fs::perms::owner_all, fs::perm_options::replace);
  m_output_dir = m_dir / "output";
  m_backend = make_backend(m_dir);
}

TestEnv::~TestEnv() {
  m_backend.reset();
  if (g_test_failed || std::uncaught_exceptions() > 0) {
    std::cerr << "kept the failed test's directory: " << m_dir.string()
              << " (stdout/stderr of every process in output/)\n";
    return;
  }
  std::error_code ignored;
  fs::remove_all(m_dir, ignored);
}

std::string TestEnv::clock_binary() {
  return getenv_or("CLOCK_BINARY", (executable_dir() / ".." / "clock").string());
}

std::string TestEnv::critical_section_binary() {
  return getenv_or("CLOCK_CRITICAL_SECTION",
                   (executable_dir() / "clock_critical_section").string());
}

std::string TestEnv::without_clone3_binary() {
  return (executable_dir() / "clock_without_clone3").string();
}

std::map<std::string, std::string> TestEnv::environment(
    const std::map<std::string, std::string>& extra) const {
  std::map<std::string, std::string> env = {
      {"PATH", getenv_or("PATH", "/usr/local/bin:/usr/bin:/bin")},
      {"HOME", (m_dir / "home").string()},
      {"XDG_CONFIG_HOME", (m_dir / "xdg-config").string()},
      {"XDG_STATE_HOME", (m_dir / "xdg-state").string()},
      {"XDG_CACHE_HOME", (m_dir / "xdg-cache").string()},
      {"XDG_RUNTIME_DIR", (m_dir / "xdg-runtime").string()},
      {"TMPDIR", (m_dir / "tmp").string()},
      {"LC_ALL", "C"},
      {"CLOCK_DATABASE_URL", m_backend->url()},
      {"T_CLOCK", clock_binary()},
      {"T_CS", critical_section_binary()},
      {"T_DIR", m_dir.string()},
  };
  // libpq's own variables (PGPASSFILE, PGSSLMODE…) and sanitizer settings
  // pass through; the runner's CLOCK_* variables never do.
  for (char** entry = environ; *entry; ++entry) {
    std::string text = *entry;
    auto eq = text.find('=');
    if (eq == std::string::npos)
      continue;
    std::string key = text.substr(0, eq);
    bool passes = key.rfind("PG", 0) == 0 || key.find("SAN_OPTIONS") != std::string::npos ||
                  key == "USER" || key == "LOGNAME";
    if (passes)
      env[key] = text.substr(eq + 1);
  }
  for (const auto& [key, value] : m_backend->environment())
    env[key] = value;
  for (const auto& [key, value] : extra) {
    if (value == k_unset) {
      env.erase(key);
    } else {
      env[key] = value;
    }
  }
  return env;
}

Command TestEnv::command(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& extra_env) const {
  return Command{argv, environment(extra_env), std::nullopt};
}

Command TestEnv::clock_command(const std::vector<std::string>& args,
                               const std::map<std::string, std::string>& extra_env) const {
  std::vector<std::string> argv = {clock_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return command(argv, extra_env);
}

Command TestEnv::shell_command(const std::string& script,
                               const std::map<std::string, std::string>& extra_env) const {
  return command({"/bin/sh", "-c", script}, extra_env);
}

Result TestEnv::clock(const std::vector<std::string>& args,
                      const std::map<std::string, std::string>& extra_env,
                      milliseconds timeout) const {
  return run(clock_command(args, extra_env), m_output_dir, timeout);
}

Result TestEnv::shell(const std::string& script,
                      const std::map<std::string, std::string>& extra_env,
                      milliseconds timeout) const {
  return run(shell_command(script, extra_env), m_output_dir, timeout);
}

std::unique_ptr<Process> TestEnv::spawn(const Command& command) const {
  return std::make_unique<Process>(command, m_output_dir);
}

std::string TestEnv::holding_script(const std::string& name, const std::string& before) const {
  std::string script = before.empty() ? "" : before + "\n";
  script += "touch \"$T_DIR/" + name + ".started\"\n";
  script += "i=0\nwhile [ ! -e \"$T_DIR/" + name + ".go\" ] && [ \"$i\" -lt 1200 ]; do\n";
  script += "  sleep 0.05\n  i=$((i + 1))\ndone\n";
  return script;
}

bool TestEnv::await_started(const std::string& name, milliseconds timeout) const {
  return await([&] { return fs::exists(path(name + ".started")); }, timeout);
}

void TestEnv::let_go(const std::string& name) const {
  write_file(path(name + ".go"), "");
}

Acquired TestEnv::acquire(const std::vector<std::string>& args) const {
  std::vector<std::string> full = {"acquire", "--format", "shell"};
  full.insert(full.end(), args.begin(), args.end());
  Result result = clock(full);
  INFO(result.describe());
  REQUIRE(result.status == 0);
  Acquired acquired;
  REQUIRE_NOTHROW(acquired = parse_acquired_shell(result.out));
  return acquired;
}

nlohmann::json TestEnv::status(const std::vector<std::string>& args) const {
  std::vector<std::string> full = {"status", "--format", "json"};
  full.insert(full.end(), args.begin(), args.end());
  Result result = clock(full);
  INFO(result.describe());
  // 0: a live lease is listed; 1: none is (the documented exit status).
  REQUIRE((result.status == 0 || result.status == 1));
  nlohmann::json json;
  REQUIRE_NOTHROW(json = nlohmann::json::parse(result.out));
  REQUIRE(json.is_object());
  REQUIRE(json.contains("holders"));
  REQUIRE(json["holders"].is_array());
  bool live =
      std::any_of(json["holders"].begin(), json["holders"].end(),
                  [](const nlohmann::json& holder) { return !holder.value("expired", false); });
  CHECK(result.status == (live ? 0 : 1));
  return json;
}

std::vector<nlohmann::json> TestEnv::holders_of(const std::string& resource, bool all) const {
  nlohmann::json json =
      status(all ? std::vector<std::string>{"--all"} : std::vector<std::string>{});
  std::vector<nlohmann::json> out;
  for (const auto& holder : json["holders"]) {
    if (holder.value("resource", "") == resource)
      out.push_back(holder);
  }
  return out;
}

pid_t await_pid_file(const TestEnv& env, const std::string& file) {
  pid_t pid = 0;
  await(
      [&] {
        std::string text = read_file(env.path(file));
        if (text.empty() || text.back() != '\n')
          return false;
        pid = static_cast<pid_t>(std::stol(text));
        return true;
      },
      30s);
  return pid;
}

}  // namespace clk::test
