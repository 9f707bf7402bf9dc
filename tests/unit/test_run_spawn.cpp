// What an exec failure or a wait status becomes as clock's exit status, and
// the environment the command gets.
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <string>
#include <sys/wait.h>

#include <doctest/doctest.h>

#include "run/spawn.hpp"

namespace {

std::string env_entry(const clk::run::Command& command, const std::string& name) {
  for (char* const* entry = command.envp(); *entry; ++entry) {
    std::string text(*entry);
    if (text.rfind(name + "=", 0) == 0)
      return text;
  }
  return "";
}

}  // namespace

TEST_CASE("a child's exit code is clock's exit status") {
  CHECK(clk::run::exit_status_of(W_EXITCODE(0, 0)) == 0);
  CHECK(clk::run::exit_status_of(W_EXITCODE(3, 0)) == 3);
  CHECK(clk::run::exit_status_of(W_EXITCODE(255, 0)) == 255);
}

TEST_CASE("a child killed by signal N gives 128+N") {
  CHECK(clk::run::exit_status_of(W_EXITCODE(0, SIGTERM)) == 128 + SIGTERM);
  CHECK(clk::run::exit_status_of(W_EXITCODE(0, SIGKILL)) == 137);
}

TEST_CASE("a command not found gives 127, one that cannot be executed 126") {
  CHECK(clk::run::exec_failure_status(ENOENT) == 127);
  CHECK(clk::run::exec_failure_status(EACCES) == 126);
  CHECK(clk::run::exec_failure_status(ENOEXEC) == 126);
  CHECK(clk::run::exec_failure_status(ENOTDIR) == 126);
}

TEST_CASE("exec failures are one line naming the command") {
  CHECK(clk::run::exec_failure_message("./x", ENOENT) == "./x: command not found");
  CHECK(clk::run::exec_failure_message("./x", EACCES) == "./x: cannot execute: Permission denied");
}

TEST_CASE("the command's environment is clock's plus the extra variables, which win") {
  setenv("CLOCK_TEST_SPAWN_KEEP", "kept", 1);
  setenv("CLOCK_TEST_SPAWN_OVERRIDE", "old", 1);
  clk::run::Command command({"sh", "-c", "true"},
                            {{"CLOCK_TEST_SPAWN_OVERRIDE", "new"}, {"CLOCK_OWNER", "abc"}});
  CHECK(std::string(command.file()) == "sh");
  CHECK(std::string(command.argv()[2]) == "true");
  CHECK(command.argv()[3] == nullptr);
  CHECK(env_entry(command, "CLOCK_TEST_SPAWN_KEEP") == "CLOCK_TEST_SPAWN_KEEP=kept");
  CHECK(env_entry(command, "CLOCK_TEST_SPAWN_OVERRIDE") == "CLOCK_TEST_SPAWN_OVERRIDE=new");
  CHECK(env_entry(command, "CLOCK_OWNER") == "CLOCK_OWNER=abc");
  int overrides = 0;
  for (char* const* entry = command.envp(); *entry; ++entry) {
    overrides += std::string(*entry).rfind("CLOCK_TEST_SPAWN_OVERRIDE=", 0) == 0;
  }
  CHECK(overrides == 1);
  unsetenv("CLOCK_TEST_SPAWN_KEEP");
  unsetenv("CLOCK_TEST_SPAWN_OVERRIDE");
}

TEST_CASE("an empty command is a usage error") {
  CHECK_THROWS(clk::run::Command({}, {}));
}
