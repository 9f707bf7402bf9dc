// clock run --max-runtime (man clock, COMMANDS and EXIT STATUS): a command that runs too long is
// stopped as timeout(1) stops it, its whole process group is gone before the
// lease is released, and clock exits 124.
#include <signal.h>
#include <string>

#include <doctest/doctest.h>

#include "common_helpers.hpp"
#include "fault_tools.hpp"
#include "harness.hpp"

using namespace clk::test;

namespace {

// Writes the command's pid to T_DIR/pid, starts `grandchild` in the
// background with its pid in T_DIR/grandchild, and waits for it.
std::string with_grandchild(const std::string& grandchild) {
  return "echo $$ > \"$T_DIR/pid\"\n"
         "echo \"$CLOCK_OWNER\" > \"$T_DIR/owner\"\n" +
         grandchild +
         " &\n"
         "echo $! > \"$T_DIR/grandchild\"\n"
         "wait\n";
}

// Checks that the process whose pid is in `file` is gone; kills it if not,
// so that a failing test leaves nothing behind.
void check_gone(const TestEnv& env, const std::string& file) {
  pid_t pid = await_pid_file(env, file);
  REQUIRE(pid > 0);
  bool alive = process_alive(pid);
  if (alive)
    kill(pid, SIGKILL);
  CHECK_MESSAGE(!alive, file << " (pid " << pid << ") outlived clock run");
}

}  // namespace

TEST_SUITE("run") {
  TEST_CASE("--max-runtime stops the command's whole group, releases the lock and exits 124") {
    TestEnv env;
    Result stopped = env.clock(
        {"run", "--max-runtime", "1s", "-r", "x", "--", "sh", "-c", with_grandchild("sleep 60")});
    CHECK_EXIT(stopped, 124);
    check_gone(env, "pid");
    check_gone(env, "grandchild");
    REQUIRE(stopped.err_lines().size() == 1);
    CHECK(stopped.err_lines()[0].find("ran out of time (--max-runtime 1s)") != std::string::npos);

    CHECK(env.holders_of("x").empty());
    std::string owner = id_of(first_line(read_file(env.path("owner"))));
    std::vector<std::string> events = event_names(history_of(env, "x"), owner);
    // Oldest first: the grant, the stop at the limit (recorded while the
    // lease is still held), the release.
    std::vector<std::string> acquired_killed_released = {"acquired", "killed", "released"};
    CHECK(events == acquired_killed_released);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x"}), 0);
  }

  TEST_CASE("--max-runtime SIGKILLs a command that ignores SIGTERM after --kill-after; exit 124") {
    TestEnv env;
    Result killed = env.clock({"run", "--max-runtime", "1s", "--kill-after", "1s", "-r", "x", "--",
                               "sh", "-c", "trap '' TERM\n" + with_grandchild("sleep 60")});
    CHECK_EXIT(killed, 124);
    check_gone(env, "pid");
    check_gone(env, "grandchild");
    REQUIRE(killed.err_lines().size() == 1);
    CHECK(killed.err_lines()[0].find("SIGKILL") != std::string::npos);
    CHECK(env.holders_of("x").empty());
  }

  TEST_CASE("--max-runtime releases only once a grandchild that outlives the command is gone") {
    TestEnv env;
    // The command dies of SIGTERM at once; its grandchild takes its time over
    // it and looks at the lock meanwhile.
    write_file(env.path("grandchild.sh"),
               "trap '\"$T_CLOCK\" status --format json x > \"$T_DIR/status.json\"; "
               "echo $? > \"$T_DIR/status.exit\"; exit 0' TERM\n"
               "sleep 60 &\n"
               "wait\n");
    Result stopped = env.clock({"run", "--max-runtime", "1s", "-r", "x", "--", "sh", "-c",
                                with_grandchild("sh \"$T_DIR/grandchild.sh\"")});
    CHECK_EXIT(stopped, 124);
    check_gone(env, "grandchild");
    CHECK(read_file(env.path("status.exit")) == "0\n");  // a live holder was listed
    std::string owner = id_of(first_line(read_file(env.path("owner"))));
    REQUIRE_FALSE(owner.empty());
    CHECK(read_file(env.path("status.json")).find(owner) != std::string::npos);
    CHECK(env.holders_of("x").empty());
  }

  TEST_CASE("a command that ends before --max-runtime keeps its own exit status") {
    TestEnv env;
    Result failed =
        env.clock({"run", "--max-runtime", "1h", "-r", "x", "--", "sh", "-c", "exit 3"});
    CHECK_EXIT(failed, 3);
    CHECK(failed.err.empty());
    Result ran = env.clock({"run", "--max-runtime", "0", "-r", "x", "--", "true"});
    CHECK_EXIT(ran, 0);
    CHECK(ran.err.empty());
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x"}), 0);
  }

  TEST_CASE("the lock is still held while --max-runtime stops the command") {
    TestEnv env;
    std::string script =
        "echo \"$CLOCK_OWNER\" > \"$T_DIR/owner\"\n"
        "trap '\"$T_CLOCK\" status --format json x > \"$T_DIR/status.json\"; "
        "echo $? > \"$T_DIR/status.exit\"; exit 0' TERM\n"
        "sleep 60 &\n"
        "wait\n";
    Result stopped = env.clock({"run", "--max-runtime", "1s", "-r", "x", "--", "sh", "-c", script});
    CHECK_EXIT(stopped, 124);
    CHECK(read_file(env.path("status.exit")) == "0\n");  // a live holder was listed
    std::string owner = id_of(first_line(read_file(env.path("owner"))));
    REQUIRE_FALSE(owner.empty());
    CHECK(read_file(env.path("status.json")).find(owner) != std::string::npos);
    CHECK(env.holders_of("x").empty());
  }

  TEST_CASE("--max-runtime with a value that is not a duration exits 64 with one line") {
    TestEnv env;
    Result refused = env.clock(
        {"run", "--max-runtime", "abc", "-r", "x", "--", "sh", "-c", "touch \"$T_DIR/ran\""});
    CHECK_EXIT(refused, 64);
    REQUIRE(refused.err_lines().size() == 1);
    CHECK(refused.err_lines()[0].find("invalid duration 'abc' for --max-runtime") !=
          std::string::npos);
    CHECK_FALSE(fs::exists(env.path("ran")));
  }
}
