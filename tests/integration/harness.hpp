// The integration tests' harness: runs the real `clock` binary (and other
// programs) as separate processes against a fresh database per test, on the
// backend named by CLOCK_TEST_BACKEND (sqlite, postgres, mariadb), in a private
// temporary directory that is kept, and its path printed, when a test fails.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

namespace clk::test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// An `extra_env` value that removes the variable instead of setting it.
inline const std::string k_unset = "\x7f(unset)";

// What to run. `env` is the whole environment: nothing is inherited.
struct Command {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::optional<std::string> stdin_text;  // none: /dev/null
};

struct Result {
  int status = -1;         // exit status, or 128+N for a process killed by signal N
  bool signaled = false;   // killed by a signal
  bool timed_out = false;  // the harness killed it after the timeout
  std::string out;         // everything it wrote to stdout
  std::string err;         // everything it wrote to stderr
  double seconds = 0;      // wall time from spawn to exit
  pid_t pid = 0;

  // The stderr lines, without empty ones.
  std::vector<std::string> err_lines() const;
  // A one-paragraph description for failure messages.
  std::string describe() const;
};

// A running process, started in its own process group. Killed (with its
// group) if still running when destroyed.
class Process {
 public:
  Process(const Command& command, const fs::path& output_dir);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return m_pid; }
  // Where its stderr goes (readable while it runs).
  const fs::path& err_path() const { return m_err_path; }
  // True until the process has exited (and has been reaped by wait/running).
  bool running();
  void signal(int signal_number);
  // Waits up to `timeout`; on timeout kills the process group with SIGKILL and
  // reports timed_out. Output files are read once it has exited.
  Result wait(milliseconds timeout = 60s);

 private:
  void reap(int wait_status);
  pid_t m_pid = -1;
  bool m_exited = false;
  int m_wait_status = 0;
  Clock::time_point m_started;
  fs::path m_out_path, m_err_path;
};

// Runs a command to completion.
Result run(const Command& command, const fs::path& output_dir, milliseconds timeout = 60s);
// Starts all commands at once, then waits for each (the timeout counts for all).
std::vector<Result> run_all(const std::vector<Command>& commands, const fs::path& output_dir,
                            milliseconds timeout = 60s);

// Polls `condition` until it holds or `timeout` passes; returns whether it held.
bool await(const std::function<bool()>& condition, milliseconds timeout,
           milliseconds interval = 20ms);

// True while a process with this pid exists and is not a zombie.
bool process_alive(pid_t pid);

std::string read_file(const fs::path& path);
void write_file(const fs::path& path, const std::string& text);

// The database every command of one test talks to.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // The URL for --database / CLOCK_DATABASE_URL.
  virtual std::string url() const = 0;
  // Variables every clock process of the test needs for this backend.
  virtual std::map<std::string, std::string> environment() const { return {}; }
};

// CLOCK_TEST_BACKEND, "sqlite" when unset.
std::string backend_name();
// Decorates a backend-only TEST_CASE: on any other backend doctest skips it
// and counts it as skipped (decided at registration, from CLOCK_TEST_BACKEND).
inline doctest::skip only_on(const std::string& backend) {
  return doctest::skip(backend_name() != backend);
}
// Decorates a TEST_CASE that runs on every backend but `backend`, where it
// cannot apply: skipped, and counted as skipped, there, and `reason` is
// printed (skip_reasons) at the start of such a run.
doctest::skip not_on(const std::string& backend, const std::string& reason);
// The reasons of the not_on decorators that skip tests on this run's backend.
const std::vector<std::string>& skip_reasons();
// Creates the backend for one test; `dir` is the test's temporary directory.
std::unique_ptr<Backend> make_backend(const fs::path& dir);

// The parts of `clock acquire` the tests rely on: the owner id its JSON
// prints, and the ID.SECRET its shell format exports (`credential`), which
// renew, release and re-entry need.
struct Acquired {
  std::string owner;
  std::string credential;
  std::vector<long long> tokens;  // one per resource, in the order clock reports
  long long token() const { return tokens.at(0); }
};
Acquired parse_acquired(const std::string& json_text);
// `export CLOCK_OWNER=ID.SECRET CLOCK_TOKEN=T1,T2` (acquire --format shell).
Acquired parse_acquired_shell(const std::string& exports);

// The samples of clock_runs_total in a Prometheus exposition, keyed
// "namespace/resource/outcome" (label values unescaped only as far as the
// test names need: they hold no '"' or '\\').
std::map<std::string, long long> runs_total(const std::string& exposition);

bool is_uuid(const std::string& text);
std::string host_name();
std::string random_uuid();
// A new owner as --owner and CLOCK_OWNER take it to acquire: ID.SECRET.
std::string random_owner();
// The id of an ID.SECRET (the text before the dot).
std::string id_of(const std::string& credential);
// Its secret (the text after the dot), as the routines take it.
std::string secret_of(const std::string& credential);

// One test's world: a temporary directory, a fresh database, an isolated HOME
// and XDG directories, and helpers to run `clock` there.
class TestEnv {
 public:
  TestEnv();
  ~TestEnv();
  TestEnv(const TestEnv&) = delete;
  TestEnv& operator=(const TestEnv&) = delete;

  const fs::path& dir() const { return m_dir; }
  fs::path path(const std::string& name) const { return m_dir / name; }
  const Backend& backend() const { return *m_backend; }
  std::string url() const { return m_backend->url(); }
  static std::string clock_binary();
  static std::string critical_section_binary();
  // tests/helpers/without_clone3.cpp, built beside the test binary.
  static std::string without_clone3_binary();

  // The environment every spawned process gets: PATH, HOME and XDG_* in the
  // temporary directory, CLOCK_DATABASE_URL, the PG* variables of the runner,
  // the backend's own (Backend::environment) and no other CLOCK_* variable.
  // `extra` adds or overrides variables.
  std::map<std::string, std::string> environment(
      const std::map<std::string, std::string>& extra = {}) const;

  // `clock ARGS…` with the test's environment.
  Command clock_command(const std::vector<std::string>& args,
                        const std::map<std::string, std::string>& extra_env = {}) const;
  // Any program with the test's environment (argv[0] looked up in PATH if relative).
  Command command(const std::vector<std::string>& argv,
                  const std::map<std::string, std::string>& extra_env = {}) const;
  // `sh -c SCRIPT` with the test's environment; CLOCK is the clock binary,
  // CS the critical-section helper, DIR the test directory.
  Command shell_command(const std::string& script,
                        const std::map<std::string, std::string>& extra_env = {}) const;

  Result clock(const std::vector<std::string>& args,
               const std::map<std::string, std::string>& extra_env = {},
               milliseconds timeout = 60s) const;
  Result shell(const std::string& script, const std::map<std::string, std::string>& extra_env = {},
               milliseconds timeout = 60s) const;
  std::unique_ptr<Process> spawn(const Command& command) const;

  // A `sh -c` script for a child that runs `before`, creates NAME.started in
  // the test directory, then stays until NAME.go appears (at most a minute).
  std::string holding_script(const std::string& name, const std::string& before = "") const;
  // Waits for the child of holding_script(name) to have started.
  bool await_started(const std::string& name, milliseconds timeout = 30s) const;
  // Lets the child of holding_script(name) finish.
  void let_go(const std::string& name) const;

  // `clock acquire --format shell ARGS…`, which must succeed.
  Acquired acquire(const std::vector<std::string>& args) const;
  // `clock status --format json ARGS…`, which must succeed: exit 0 with a live
  // holder listed, 1 with none (checked).
  nlohmann::json status(const std::vector<std::string>& args = {}) const;
  // The holders listed by status (with --all if `all`) for exactly `resource`.
  std::vector<nlohmann::json> holders_of(const std::string& resource, bool all = false) const;

 private:
  fs::path m_dir;
  fs::path m_output_dir;  // stdout/stderr files of spawned processes
  std::unique_ptr<Backend> m_backend;
};

// The pid a child wrote to `file` (a line ending in a newline), once it has;
// 0 if it has not within 30 s.
pid_t await_pid_file(const TestEnv& env, const std::string& file);

}  // namespace clk::test

// Checks a Result's exit status, printing its pid, status, stdout and stderr
// if it differs.
#define CHECK_EXIT(result_expression, expected)            \
  do {                                                     \
    const auto& clk_checked_result_ = (result_expression); \
    INFO(clk_checked_result_.describe());                  \
    CHECK(clk_checked_result_.status == (expected));       \
  } while (false)

#define REQUIRE_EXIT(result_expression, expected)          \
  do {                                                     \
    const auto& clk_checked_result_ = (result_expression); \
    INFO(clk_checked_result_.describe());                  \
    REQUIRE(clk_checked_result_.status == (expected));     \
  } while (false)
