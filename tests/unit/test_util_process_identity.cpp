// util/process_identity: a pid with its start time names one process; a
// reused pid, a zombie and a pid that is gone do not.
#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include "util/process_identity.hpp"

using namespace clk::util;

TEST_SUITE("util::process_identity") {
  TEST_CASE("this process runs under its own pid and start time, not under another start time") {
    auto started = process_start_ticks(getpid());
    REQUIRE(started);
    CHECK(process_presence(getpid(), *started) == Presence::running);
    CHECK(process_presence(getpid(), *started + 1) == Presence::gone);
  }

  TEST_CASE("a child that exited is gone while a zombie, and after it is reaped") {
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      pause();
      _exit(0);
    }
    auto started = process_start_ticks(child);
    REQUIRE(started);
    CHECK(process_presence(child, *started) == Presence::running);
    kill(child, SIGKILL);
    siginfo_t info{};
    // Waits for the exit without reaping: the child stays a zombie.
    REQUIRE(waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT) == 0);
    CHECK(process_presence(child, *started) == Presence::gone);
    REQUIRE(waitpid(child, nullptr, 0) == child);
    CHECK(process_presence(child, *started) == Presence::gone);
  }

  TEST_CASE("the boot id and this pid namespace are read") {
    auto boot = boot_id();
    REQUIRE(boot);
    CHECK(boot->size() == 36);
    CHECK(pid_namespace().has_value());
  }

  TEST_CASE("a cgroup path outside /sys/fs/cgroup is never read") {
    CHECK(!cgroup_has_processes("/etc").has_value());
    CHECK(!cgroup_has_processes("/sys/fs/cgroup/../../etc").has_value());
    CHECK(cgroup_has_processes("/sys/fs/cgroup/clock-job-no-such-cgroup") == false);
  }
}
