// A lease lost by expiry ends the whole job before another holder can start
// (docs/whole-job.md): the holder cannot renew (SQLite: another
// connection holds the write lock; PostgreSQL: the server is stopped), so
// clock stops every process of the job, those that left its group or
// session included, before its TTL runs out, and exits 79; the next holder,
// granted only once the lease has expired, starts after the last of them
// is gone. A forced release lets the next holder in at once by design
// (fencing covers it), so loss by expiry is what shows the order.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "fault_tools.hpp"
#include "harness.hpp"
#include "postgres_tools.hpp"

using namespace clk::test;
using nlohmann::json;

namespace {

// The processes of the job: one that leaves the session (setsid), one that
// ignores SIGHUP (nohup), one re-parented by a double fork, each a loop.
const std::vector<std::string> k_marks = {"setsid", "nohup", "double-fork"};

std::string mark_script(const std::string& name) {
  return "echo $$ > \"$T_DIR/" + name + ".tmp\"; mv \"$T_DIR/" + name + ".tmp\" \"$T_DIR/" + name +
         ".pid\"\n" + "while :; do sleep 0.05; done\n";
}

// The command: starts the three, waits until each has written its pid,
// says so, and runs on.
std::string job_script(const TestEnv& env) {
  for (const auto& name : k_marks)
    write_file(env.path(name + ".sh"), mark_script(name));
  return "setsid sh \"$T_DIR/setsid.sh\" </dev/null >/dev/null 2>&1 &\n"
         "nohup sh \"$T_DIR/nohup.sh\" </dev/null >/dev/null 2>&1 &\n"
         "(sh \"$T_DIR/double-fork.sh\" &) </dev/null >/dev/null 2>&1\n"
         "while [ ! -e \"$T_DIR/setsid.pid\" ] || [ ! -e \"$T_DIR/nohup.pid\" ] || "
         "[ ! -e \"$T_DIR/double-fork.pid\" ]; do sleep 0.01; done\n"
         "touch \"$T_DIR/job.started\"\n"
         "while :; do sleep 0.05; done\n";
}

std::int64_t ns_in(const TestEnv& env, const std::string& file) {
  std::string text = read_file(env.path(file));
  return text.empty() ? 0 : std::stoll(text);
}

std::int64_t wall_clock_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Awaits the exit of every mark, looking each millisecond; returns the wall
// clock (ms since the epoch) when all were seen gone: no earlier than the
// last one's exit. 0 if one outlived 30 s (then killed, so that a failing
// test leaves nothing behind).
std::int64_t marks_gone_ms(const TestEnv& env) {
  std::vector<pid_t> pids;
  for (const auto& name : k_marks) {
    pids.push_back(await_pid_file(env, name + ".pid"));
    REQUIRE(pids.back() > 0);
  }
  bool gone =
      await([&] { return std::none_of(pids.begin(), pids.end(), process_alive); }, 30s, 1ms);
  std::int64_t seen = wall_clock_ms();
  for (std::size_t i = 0; i < pids.size(); ++i) {
    bool alive = process_alive(pids[i]);
    if (alive)
      kill(pids[i], SIGKILL);
    CHECK_MESSAGE(!alive, k_marks[i] << " process (pid " << pids[i] << ") outlived the lost lease");
  }
  return gone ? seen : 0;
}

// The lost lease's expiry (ms since the epoch), from history: its grant and
// how long it was held when it ended (lost, on SQLite, found by the
// holder's renewal; expired, on PostgreSQL, removed by the next acquire).
std::int64_t expiry_ms(const TestEnv& env, const std::string& owner) {
  std::int64_t acquired = 0;
  std::int64_t held = -1;
  for (const auto& event : history_of(env, "job")) {
    if (event.at("owner") != owner)
      continue;
    if (event.at("event") == "acquired")
      acquired = epoch_ms(event.at("at"));
    if ((event.at("event") == "lost" || event.at("event") == "expired") &&
        event.at("held_for_ms").is_number())
      held = event.at("held_for_ms");
  }
  REQUIRE(acquired > 0);
  REQUIRE(held >= 0);
  return acquired + held;
}

// The next holder, started while the lease is still held and waiting for
// it (-w): it stamps its start once granted.
std::unique_ptr<Process> spawn_next_holder(const TestEnv& env) {
  return env.spawn(env.clock_command(
      {"run", "-w", "90s", "-r", "job", "--", "sh", "-c", "date +%s%N > \"$T_DIR/next.start\""}));
}

// Checks that the next holder started after the last mark was gone, and
// was granted no earlier than the lost lease's expiry.
void check_next_holder(const TestEnv& env, Process& next_holder, const std::string& lost_owner,
                       std::int64_t gone_ms) {
  REQUIRE_EXIT(next_holder.wait(90s), 0);
  std::int64_t started = ns_in(env, "next.start") / 1'000'000;
  std::int64_t expired = expiry_ms(env, lost_owner);
  MESSAGE("the last job process stopped " << expired - gone_ms
                                          << " ms before the lease expired; the next holder "
                                          << "started " << started - gone_ms << " ms after it");
  CHECK(gone_ms < expired);
  CHECK(started > gone_ms);
  std::int64_t granted = 0;
  for (const auto& event : history_of(env, "job")) {
    if (event.at("owner") != lost_owner && event.at("event") == "acquired")
      granted = epoch_ms(event.at("at"));
  }
  CHECK(granted >= expired);
}

}  // namespace

TEST_SUITE("faults") {
  TEST_CASE(
      "SQLite: a holder that cannot renew (another connection holds the write lock) ends its "
      "whole job before its TTL runs out, exits 79, and the next holder starts after the last "
      "of the job's processes is gone" *
      doctest::timeout(180) * ::clk::test::only_on("sqlite")) {
    TestEnv env;
    const std::string database = env.url().substr(std::string("sqlite:").size());
    auto holder =
        env.spawn(env.clock_command({"run", "--ttl", "3s", "--heartbeat", "500ms", "--kill-after",
                                     "1s", "-r", "job", "--", "sh", "-c", job_script(env)}));
    REQUIRE(env.await_started("job"));
    const std::string owner = only_holder(env, "job").at("owner");

    // The write lock, held from another process until told to let go.
    write_file(env.path("blocker.py"),
               "import os, sqlite3, sys, time\n"
               "c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)\n"
               "c.execute('BEGIN EXCLUSIVE')\n"
               "open(sys.argv[2] + '.started', 'w').close()\n"
               "while not os.path.exists(sys.argv[2] + '.go'):\n"
               "    time.sleep(0.01)\n"
               "c.execute('ROLLBACK')\n");
    auto blocker = env.spawn(env.command(
        {"python3", env.path("blocker.py").string(), database, env.path("blocker").string()}));
    REQUIRE(env.await_started("blocker"));
    auto next = spawn_next_holder(env);
    // Readers still read (WAL): the expiry no renewal can move any more.
    const std::int64_t expires = epoch_ms(only_holder(env, "job").at("expires_at"));

    const std::int64_t marks_gone = marks_gone_ms(env);
    REQUIRE(marks_gone > 0);
    CHECK(marks_gone < expires);
    CHECK(holder->running());  // its renewal waits for the lock

    // Let go once the lease has expired, so that nothing renews it.
    REQUIRE(await([&] { return wall_clock_ms() > expires + 100; }, 30s));
    env.let_go("blocker");
    CHECK_EXIT(blocker->wait(30s), 0);
    CHECK_EXIT(holder->wait(60s), 79);
    check_next_holder(env, *next, owner, marks_gone);
  }

  TEST_CASE(
      "PostgreSQL: a holder that cannot renew (the server is down) ends its whole job before "
      "its TTL runs out, exits 79, and the next holder starts after the last of the job's "
      "processes is gone" *
      doctest::timeout(300) * ::clk::test::only_on("postgres")) {
    TestEnv env;
    pg::ServerRestorer restorer(env);  // after env: the server is up before env drops its database
    REQUIRE(pg::server_answers(env));
    auto holder =
        env.spawn(env.clock_command({"run", "--ttl", "5s", "--heartbeat", "1s", "--kill-after",
                                     "1s", "-r", "job", "--", "sh", "-c", job_script(env)}));
    REQUIRE(env.await_started("job"));
    const std::string owner = only_holder(env, "job").at("owner");

    REQUIRE_EXIT(pg::pg_ctl(env, {"stop", "-m", "immediate"}), 0);
    auto next = spawn_next_holder(env);  // waits for the server, then for the lease
    const std::int64_t marks_gone = marks_gone_ms(env);
    REQUIRE(marks_gone > 0);
    CHECK_EXIT(holder->wait(60s), 79);

    REQUIRE_EXIT(pg::pg_ctl(env, {"start"}), 0);
    REQUIRE(await([&] { return pg::server_answers(env); }, 60s, 100ms));
    check_next_holder(env, *next, owner, marks_gone);
  }
}
