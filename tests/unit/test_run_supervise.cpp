// clock run's supervision against real processes: exit statuses, exec
// failures, the environment, signal forwarding, the lease-lost policy, and
// what happens to the child when clock dies.
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <signal.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <doctest/doctest.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include "error.hpp"
#include "run/supervise.hpp"

using namespace std::chrono_literals;
using clk::run::LeaseLostPolicy;
using clk::run::RenewOutcome;
using clk::run::RunOptions;
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

// Waits for a condition, checking every few milliseconds; false on timeout.
bool wait_for(const std::function<bool()>& condition, Clock::duration timeout = 10s) {
  auto give_up = Clock::now() + timeout;
  while (!condition()) {
    if (Clock::now() > give_up)
      return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// A directory for marker files; kept for inspection when CLOCK_TEST_KEEP is set.
class ScratchDir {
 public:
  ScratchDir() {
    std::string name = (fs::temp_directory_path() / "clock-test-run-XXXXXX").string();
    m_path = mkdtemp(name.data());
  }
  ~ScratchDir() {
    if (!std::getenv("CLOCK_TEST_KEEP"))
      fs::remove_all(m_path);
  }
  std::string file(const std::string& name) const { return (m_path / name).string(); }
  bool has(const std::string& name) const { return fs::exists(m_path / name); }
  void touch(const std::string& name) const { std::ofstream(m_path / name).flush(); }
  pid_t read_pid(const std::string& name) const {
    pid_t pid = -1;
    std::ifstream(m_path / name) >> pid;
    return pid;
  }

 private:
  fs::path m_path;
};

// Captures what clock logs, for tests that check the message or wait for it.
class CapturedLog {
 public:
  CapturedLog() : m_sink(std::make_shared<Sink>()), m_previous(spdlog::default_logger()) {
    auto logger = std::make_shared<spdlog::logger>("capture", m_sink);
    logger->set_level(spdlog::level::debug);
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(m_previous); }

  std::string text() const { return m_sink->text(); }
  bool contains(const std::string& part) const { return text().find(part) != std::string::npos; }

 private:
  class Sink : public spdlog::sinks::base_sink<std::mutex> {
   public:
    std::string text() const {
      std::lock_guard lock(m_lines_mutex);
      return m_lines;
    }

   protected:
    void sink_it_(const spdlog::details::log_msg& message) override {
      std::lock_guard lock(m_lines_mutex);
      m_lines.append(message.payload.data(), message.payload.size()).append("\n");
    }
    void flush_() override {}

   private:
    mutable std::mutex m_lines_mutex;
    std::string m_lines;
  };

  std::shared_ptr<Sink> m_sink;
  std::shared_ptr<spdlog::logger> m_previous;
};

RunOptions shell(const std::string& script) {
  RunOptions options;
  options.argv = {"sh", "-c", script};
  options.ttl = 0ms;
  return options;
}

// Short timings whose deadline is 700ms after the last renewal's start.
RunOptions with_lease(RunOptions options) {
  options.ttl = 1s;
  options.heartbeat = 100ms;
  options.kill_after = 200ms;
  return options;
}

RenewOutcome always_renewed() {
  return RenewOutcome::renewed;
}

// clock reaps everything it forks: the child and the guard.
bool no_children_left() {
  return waitpid(-1, nullptr, WNOHANG) < 0 && errno == ECHILD;
}

int supervise(const RunOptions& options, const clk::run::Renew& renew = always_renewed) {
  int status = clk::run::supervise(options, renew, Clock::now());
  CHECK(no_children_left());
  return status;
}

// Gone, or a zombie waiting for whoever inherited it.
bool process_gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat)
    return true;
  std::string line;
  std::getline(stat, line);
  auto state = line.find(") ");
  return state != std::string::npos && line[state + 2] == 'Z';
}

}  // namespace

TEST_CASE("the child's exit status is passed through") {
  CHECK(supervise(shell("exit 3")) == 3);
  CHECK(supervise(shell("exit 0")) == 0);
}

TEST_CASE("a child killed by signal N gives 128+N") {
  CHECK(supervise(shell("kill -KILL $$")) == 128 + SIGKILL);
  CHECK(supervise(shell("kill -TERM $$")) == 128 + SIGTERM);
}

TEST_CASE("a command that is not found gives 127") {
  CapturedLog log;
  RunOptions options;
  options.ttl = 0ms;
  SUBCASE("on the PATH") {
    options.argv = {"clock-test-no-such-command"};
  }
  SUBCASE("by path") {
    options.argv = {"/nonexistent/clock-test"};
  }
  CHECK(supervise(options) == 127);
  CHECK(log.contains(options.argv[0] + ": command not found"));
}

TEST_CASE("a file that cannot be executed gives 126") {
  CapturedLog log;
  ScratchDir dir;
  dir.touch("not-executable");
  RunOptions options;
  options.ttl = 0ms;
  SUBCASE("no execute permission") {
    options.argv = {dir.file("not-executable")};
  }
  SUBCASE("a directory") {
    options.argv = {dir.file("")};
  }
  CHECK(supervise(options) == 126);
  CHECK(log.contains("cannot execute: Permission denied"));
}

TEST_CASE("the child sees clock's environment plus the extra variables") {
  setenv("CLOCK_TEST_RUN_VAR", "old", 1);
  RunOptions options =
      shell(R"(test "$CLOCK_TEST_RUN_VAR" = new && test "$CLOCK_OWNER" = abc && test -n "$HOME")");
  options.extra_env = {{"CLOCK_TEST_RUN_VAR", "new"}, {"CLOCK_OWNER", "abc"}};
  CHECK(supervise(options) == 0);
  unsetenv("CLOCK_TEST_RUN_VAR");
}

TEST_CASE("the child runs in a process group of its own") {
  ScratchDir dir;
  RunOptions options = shell("cut -d' ' -f5 /proc/$$/stat > " + dir.file("pgid"));
  CHECK(supervise(options) == 0);
  pid_t child_group = dir.read_pid("pgid");
  CHECK(child_group > 0);
  CHECK(child_group != getpgrp());
}

TEST_CASE("signals sent to clock are forwarded to the child") {
  ScratchDir dir;
  int signo = SIGUSR1;
  SUBCASE("SIGUSR1") {
    signo = SIGUSR1;
  }
  SUBCASE("SIGTERM") {
    signo = SIGTERM;
  }
  SUBCASE("SIGINT") {
    signo = SIGINT;
  }
  SUBCASE("SIGHUP") {
    signo = SIGHUP;
  }
  std::string name = signo == SIGUSR1   ? "USR1"
                     : signo == SIGTERM ? "TERM"
                     : signo == SIGINT  ? "INT"
                                        : "HUP";
  RunOptions options = shell("trap 'exit 5' " + name + "; touch " + dir.file("ready") +
                             "; while :; do sleep 0.01; done");
  std::thread sender([&] {
    if (wait_for([&] { return dir.has("ready"); }))
      kill(getpid(), signo);
  });
  CHECK(supervise(options) == 5);
  sender.join();
}

TEST_CASE("a lost lease stops the child's process group with SIGTERM and gives 79") {
  CapturedLog log;
  ScratchDir dir;
  RunOptions options =
      with_lease(shell("trap 'touch " + dir.file("terminated") + "; exit 0' TERM; touch " +
                       dir.file("ready") + "; while :; do sleep 0.01; done"));
  options.kill_after = 5s;
  options.ttl = 10s;
  options.lease_name = "bootstrap";
  auto renew = [&] { return dir.has("ready") ? RenewOutcome::lost : RenewOutcome::renewed; };
  auto start = Clock::now();
  CHECK(supervise(options, renew) == 79);
  CHECK(Clock::now() - start < 5s);  // SIGTERM did it, not SIGKILL
  CHECK(dir.has("terminated"));
  INFO(log.text());
  CHECK(log.contains("the lease on bootstrap was lost"));
  CHECK(log.contains("stopping the command"));
}

TEST_CASE("a child that ignores SIGTERM is killed after --kill-after") {
  ScratchDir dir;
  RunOptions options = with_lease(
      shell("trap '' TERM; touch " + dir.file("ready") + "; while :; do sleep 0.01; done"));
  auto renew = [&] { return dir.has("ready") ? RenewOutcome::lost : RenewOutcome::renewed; };
  CHECK(supervise(options, renew) == 79);
}

TEST_CASE("renewals that stay unavailable past the deadline stop the child") {
  CapturedLog log;
  RunOptions options = with_lease(RunOptions{});
  options.argv = {"sleep", "30"};
  std::atomic<int> calls = 0;
  auto renew = [&] {
    ++calls;
    return RenewOutcome::unavailable;
  };
  auto start = Clock::now();
  CHECK(supervise(options, renew) == 79);
  CHECK(Clock::now() - start >= 700ms);
  CHECK(Clock::now() - start < 5s);
  CHECK(calls >= 2);
  INFO(log.text());
  CHECK(log.contains("was not renewed in time"));
}

TEST_CASE("a single failed renewal followed by successes does not stop the child") {
  ScratchDir dir;
  // Ten renewals at 100ms take well past the 700ms a lease without renewals
  // would last.
  RunOptions options =
      with_lease(shell("until [ -e " + dir.file("done") + " ]; do sleep 0.01; done; exit 7"));
  std::atomic<int> calls = 0;
  auto renew = [&] {
    int call = ++calls;
    if (call == 10)
      dir.touch("done");
    return call == 1 ? RenewOutcome::unavailable : RenewOutcome::renewed;
  };
  CHECK(supervise(options, renew) == 7);
  CHECK(calls >= 10);
}

TEST_CASE("each failed renewal is one line in our words: what failed, the next try, time left") {
  CapturedLog log;
  ScratchDir dir;
  RunOptions options =
      with_lease(shell("until [ -e " + dir.file("done") + " ]; do sleep 0.01; done; exit 0"));
  options.lease_name = "x";
  std::atomic<int> calls = 0;
  auto renew = [&] {
    int call = ++calls;
    if (call <= 2)
      throw clk::Error(clk::ExitCode::unavailable,
                       "lost the connection: Could not obtain client encoding: not connected.; "
                       "retry, or look with 'clock status'");
    dir.touch("done");
    return RenewOutcome::renewed;
  };
  CHECK(supervise(options, renew) == 0);
  INFO(log.text());
  std::string text = log.text();
  auto lines_with = [&](const std::string& part) {
    int count = 0;
    for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
      ++count;
    return count;
  };
  CHECK(lines_with("renewing the lease on x failed (attempt 1): the database is unavailable; "
                   "next try in ") == 1);
  CHECK(lines_with("failed (attempt 2)") == 1);
  CHECK(lines_with("the command is stopped in ") == 2);
  CHECK(lines_with("retry, or look with") == 2);  // the debug lines only, "in full"
  CHECK(lines_with("in full") == 2);
  CHECK(log.contains("renewed the lease on x again after 2 failed attempts"));
}

TEST_CASE("a check between renewals that finds the lease lost stops the child at once") {
  CapturedLog log;
  ScratchDir dir;
  RunOptions options = shell("touch " + dir.file("ready") + "; while :; do sleep 0.01; done");
  options.ttl = 30s;
  options.heartbeat = 10s;
  options.kill_after = 1s;
  options.lease_name = "x";
  clk::run::LeaseKeeping keeping;
  std::atomic<int> renewals = 0;
  keeping.renew = [&] {
    ++renewals;
    return RenewOutcome::renewed;
  };
  keeping.still_holds = [&] { return !dir.has("ready"); };
  keeping.check_interval = 50ms;
  auto start = Clock::now();
  {
    clk::run::Guard guard;  // reaped as it goes out of scope
    CHECK(clk::run::supervise(options, guard, keeping, Clock::now(), {}) == 79);
  }
  CHECK(Clock::now() - start < 5s);  // not the renewal 10s in
  CHECK(renewals == 0);
  CHECK(no_children_left());
  INFO(log.text());
  CHECK(log.contains("the lease on x was lost"));
}

TEST_CASE("with --on-lease-lost warn the child keeps running and its status is passed through") {
  CapturedLog log;
  ScratchDir dir;
  RunOptions options = with_lease(shell("touch " + dir.file("ready") + "; until [ -e " +
                                        dir.file("go") + " ]; do sleep 0.01; done; exit 4"));
  options.on_lease_lost = LeaseLostPolicy::warn;
  std::atomic<bool> recovered = false;
  auto renew = [&] { return recovered ? RenewOutcome::renewed : RenewOutcome::unavailable; };
  std::thread operator_([&] {
    wait_for([&] { return log.contains("keeps running"); });
    recovered = true;
    wait_for([&] { return log.contains("again after"); });
    dir.touch("go");
  });
  CHECK(supervise(options, renew) == 4);
  operator_.join();
  INFO(log.text());
  CHECK(log.contains("keeps running"));
  CHECK(log.contains("renewed the lease again after"));
}

TEST_CASE("with --ttl 0 there are no renewals") {
  std::atomic<int> calls = 0;
  auto renew = [&] {
    ++calls;
    return RenewOutcome::renewed;
  };
  RunOptions options = shell("sleep 0.3");
  options.heartbeat = 10ms;
  CHECK(supervise(options, renew) == 0);
  CHECK(calls == 0);
}

TEST_CASE("if clock is killed, the child and its grandchildren die too") {
  ScratchDir dir;
  RunOptions options =
      shell("echo $$ > " + dir.file("child") + "; sleep 300 & echo $! > " + dir.file("tmp") +
            "; mv " + dir.file("tmp") + " " + dir.file("grandchild") + "; wait");
  pid_t clock = fork();
  REQUIRE(clock >= 0);
  if (clock == 0)
    _exit(clk::run::supervise(options, always_renewed, Clock::now()));
  bool started = wait_for([&] { return dir.has("grandchild"); });
  kill(clock, SIGKILL);
  waitpid(clock, nullptr, 0);
  REQUIRE(started);
  pid_t child = dir.read_pid("child");
  pid_t grandchild = dir.read_pid("grandchild");
  CHECK(wait_for([&] { return process_gone(child); }));
  CHECK(wait_for([&] { return process_gone(grandchild); }));
}

TEST_CASE("beside_command runs once while the command runs, before any renewal") {
  ScratchDir dir;
  // The command waits (up to 10s) for the file that only the hook creates.
  RunOptions options = with_lease(shell("i=0; while [ ! -e " + dir.file("hook-ran") +
                                        " ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done; "
                                        "[ -e " +
                                        dir.file("hook-ran") + " ] && exit 4; exit 9"));
  std::atomic<int> renewals{0};
  int calls = 0;
  int renewals_before = -1;
  options.beside_command = [&] {
    ++calls;
    renewals_before = renewals.load();
    dir.touch("hook-ran");
  };
  CHECK(supervise(options, [&] {
          ++renewals;
          return RenewOutcome::renewed;
        }) == 4);
  CHECK(calls == 1);
  CHECK(renewals_before == 0);
}

TEST_CASE("beside_command does not run for a command that could not be started") {
  CapturedLog log;
  RunOptions options;
  options.ttl = 0ms;
  options.argv = {"clock-test-no-such-command"};
  int calls = 0;
  options.beside_command = [&] { ++calls; };
  CHECK(supervise(options) == 127);
  CHECK(calls == 0);
}

TEST_CASE("--max-runtime stops a command that runs too long with SIGTERM and gives 124") {
  CapturedLog log;
  RunOptions options = shell("sleep 30");
  options.max_runtime = 100ms;
  int out_of_time_calls = 0;
  options.on_out_of_time = [&] { ++out_of_time_calls; };
  CHECK(supervise(options) == 124);
  CHECK(out_of_time_calls == 1);
  INFO(log.text());
  CHECK(
      log.contains("the command ran out of time (--max-runtime 100ms) and was stopped by SIGTERM"));
}

TEST_CASE("a command that ends within --max-runtime keeps its status") {
  RunOptions options = shell("exit 5");
  options.max_runtime = 1h;
  int out_of_time_calls = 0;
  options.on_out_of_time = [&] { ++out_of_time_calls; };
  CHECK(supervise(options) == 5);
  CHECK(out_of_time_calls == 0);
}

TEST_CASE(
    "--max-runtime waits for a grandchild that outlives the command, SIGKILLs it, gives 124") {
  ScratchDir dir;
  RunOptions options = shell("sh -c \"trap '' TERM; echo \\$\\$ > " + dir.file("grandchild") +
                             "; while :; do sleep 0.01; done\" & wait");
  options.max_runtime = 500ms;
  options.kill_after = 300ms;
  CHECK(supervise(options) == 124);
  pid_t grandchild = dir.read_pid("grandchild");
  REQUIRE(grandchild > 0);
  CHECK(process_gone(grandchild));  // already, not eventually
}

TEST_CASE("--max-runtime keeps renewing the lease while the command is being stopped") {
  ScratchDir dir;
  // The command stays after SIGTERM until a renewal has come after it.
  RunOptions options = with_lease(shell("trap 'touch " + dir.file("terminated") + "; until [ -e " +
                                        dir.file("renewed") +
                                        " ]; do sleep 0.01; done; exit 0' "
                                        "TERM; while :; do sleep 0.01; done"));
  options.ttl = 10s;
  options.kill_after = 5s;
  options.max_runtime = 100ms;
  auto renew = [&] {
    if (dir.has("terminated"))
      dir.touch("renewed");
    return RenewOutcome::renewed;
  };
  CHECK(supervise(options, renew) == 124);
  CHECK(dir.has("renewed"));
}

TEST_CASE("a lease lost while --max-runtime stops the command gives 79") {
  CapturedLog log;
  ScratchDir dir;
  RunOptions options = with_lease(
      shell("trap 'touch " + dir.file("terminated") + "' TERM; while :; do sleep 0.01; done"));
  options.ttl = 10s;
  options.kill_after = 2s;
  options.max_runtime = 100ms;
  int out_of_time_calls = 0;
  options.on_out_of_time = [&] { ++out_of_time_calls; };
  auto renew = [&] { return dir.has("terminated") ? RenewOutcome::lost : RenewOutcome::renewed; };
  CHECK(supervise(options, renew) == 79);
  CHECK(out_of_time_calls == 0);
  INFO(log.text());
  CHECK(log.contains("was lost"));
  CHECK_FALSE(log.contains("ran out of time"));
}
