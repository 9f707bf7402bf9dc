// clock run on a terminal: the child gets the foreground, so it can read the
// terminal and Ctrl-C reaches it, and Ctrl-Z does not leave it stuck.
#include <chrono>
#include <csignal>
#include <poll.h>
#include <pty.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <doctest/doctest.h>

#include "run/supervise.hpp"

using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;

// Reads the terminal's output until `marker` appears; false on timeout or end.
bool read_until(int master, const std::string& marker, std::string& seen) {
  auto give_up = Clock::now() + 10s;
  while (seen.find(marker) == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - Clock::now());
    if (left <= 0ms)
      return false;
    pollfd fd{master, POLLIN, 0};
    if (poll(&fd, 1, static_cast<int>(left.count())) <= 0)
      continue;
    char buffer[256];
    ssize_t n = read(master, buffer, sizeof buffer);
    if (n <= 0)
      return false;
    seen.append(buffer, static_cast<std::size_t>(n));
  }
  return true;
}

// Runs `script` under supervise() in a new session on a new terminal; clock's
// process is the session leader, in the terminal's foreground group.
pid_t run_on_terminal(const std::string& script, int& master) {
  pid_t clock = forkpty(&master, nullptr, nullptr, nullptr);
  if (clock == 0) {
    clk::run::RunOptions options;
    options.argv = {"sh", "-c", script};
    options.ttl = 0ms;
    _exit(clk::run::supervise(
        options, [] { return clk::run::RenewOutcome::renewed; }, Clock::now()));
  }
  return clock;
}

// clock's exit status; -1 if it had not finished within 10s (it is then
// killed, so that a failing test leaves nothing behind).
int exit_status(pid_t clock) {
  int status = 0;
  auto give_up = Clock::now() + 10s;
  while (waitpid(clock, &status, WNOHANG) == 0) {
    if (Clock::now() > give_up) {
      kill(clock, SIGKILL);
      waitpid(clock, nullptr, 0);
      return -1;
    }
    std::this_thread::sleep_for(5ms);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

TEST_CASE("an interactive child can read the terminal") {
  int master = -1;
  pid_t clock = run_on_terminal("read line; echo \"got:$line\"; exit 6", master);
  REQUIRE(clock > 0);
  std::string seen;
  CHECK(write(master, "hello\n", 6) == 6);
  CHECK(read_until(master, "got:hello", seen));
  CHECK(exit_status(clock) == 6);
  close(master);
}

TEST_CASE("Ctrl-C on the terminal reaches the child, not clock") {
  int master = -1;
  pid_t clock = run_on_terminal("echo ready; exec sleep 30", master);
  REQUIRE(clock > 0);
  std::string seen;
  CHECK(read_until(master, "ready", seen));
  CHECK(write(master, "\x03", 1) == 1);
  CHECK(exit_status(clock) == 128 + SIGINT);
  close(master);
}

TEST_CASE("Ctrl-Z on the terminal does not leave the child stopped for good") {
  int master = -1;
  // clock's group is orphaned here (its parent is in another session), so it
  // cannot stop itself and continues the child at once.
  pid_t clock = run_on_terminal("echo ready; read line; echo \"got:$line\"", master);
  REQUIRE(clock > 0);
  std::string seen;
  CHECK(read_until(master, "ready", seen));
  CHECK(write(master, "\x1a", 1) == 1);
  CHECK(write(master, "after\n", 6) == 6);
  CHECK(read_until(master, "got:after", seen));
  CHECK(exit_status(clock) == 0);
  close(master);
}
