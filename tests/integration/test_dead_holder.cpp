// A holder that died on this host frees its lock at once for the next
// request from this host (clock(1), "Lease"; docs/dead-holder.md): the
// whole of a holder killed (clock, its guard and its job, as kill -9 of the
// group or the OOM killer does) is taken over and recorded as an expiry
// ("holder died"); a job that outlived clock keeps the lock; another host
// (here: another pid namespace of this kernel, as a container is) waits for
// the TTL and is told when that is.
#include <csignal>
#include <sstream>
#include <string>
#include <sys/types.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include "fault_tools.hpp"
#include "harness.hpp"

using namespace clk::test;
using nlohmann::json;

namespace {

// A `clock run` holding `job` whose command (`script`) writes the pid of
// the job's process to watch to T_DIR/pid; returned once the holder has
// renewed its lease (status shows a renewed_at after acquired_at): its
// command runs and it is past its first renewal.
struct Holder {
  std::unique_ptr<Process> clock;
  pid_t job = 0;
  pid_t group = 0;  // the job's process group: the guard's pid
  json lease;
};

constexpr const char* k_sleeper = "echo $$ > \"$T_DIR/pid\"; exec sleep 1000";

Holder start_holder(const TestEnv& env, const std::string& ttl = "60s",
                    const std::string& script = k_sleeper) {
  Holder holder;
  holder.clock = env.spawn(env.clock_command(
      {"run", "-v", "--ttl", ttl, "--heartbeat", "200ms", "-r", "job", "--", "sh", "-c", script}));
  holder.job = await_pid_file(env, "pid");
  REQUIRE(holder.job > 0);
  holder.group = getpgid(holder.job);
  REQUIRE(holder.group > 0);
  REQUIRE(holder.group != holder.clock->pid());
  bool renewed = await(
      [&] {
        auto holders = env.holders_of("job");
        if (holders.size() != 1 || holders[0].at("renewed_at") == holders[0].at("acquired_at"))
          return false;
        holder.lease = holders[0];
        return true;
      },
      30s, 50ms);
  // Under a loaded CI machine the first renewal can miss a short TTL (the
  // holder then stops its job as it must): what it said shows why.
  REQUIRE_MESSAGE(renewed, "the holder never renewed its lease; running: "
                               << holder.clock->running()
                               << "; status: " << env.status({"--all"}).dump() << "; its stderr:\n"
                               << read_file(holder.clock->err_path()));
  return holder;
}

// SIGKILL to clock and to its job's whole process group (guard and job), as
// an OOM kill or `kill -9 -- -PGID` of everything leaves it; waits until
// none of them runs.
void kill_everything(Holder& holder) {
  holder.clock->signal(SIGKILL);
  kill(-holder.group, SIGKILL);
  Result result = holder.clock->wait(10s);
  CHECK(result.status == 128 + SIGKILL);
  REQUIRE(
      await([&] { return !process_alive(holder.job) && !process_alive(holder.group); }, 10s, 5ms));
}

// The children of `pid` (its main thread's: clock forks its guard before
// starting any thread).
std::vector<pid_t> children_of(pid_t pid) {
  std::istringstream in(
      read_file("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children"));
  std::vector<pid_t> out;
  for (pid_t child = 0; in >> child;)
    out.push_back(child);
  return out;
}

// A `clock run` on `resource` whose start ping (`url`) hangs, killed with
// SIGKILL once granted, while it waits up to the ping's timeout (2 s)
// before starting its command; its guard then ends. The lease as status
// showed it, or null when the command had started by the kill after all.
json killed_before_command(const TestEnv& env, const std::string& url,
                           const std::string& resource) {
  const std::string started = "started-" + resource;
  auto clock =
      env.spawn(env.clock_command({"run", "--ttl", "60s", "-r", resource, "--ping", url, "--", "sh",
                                   "-c", "touch \"$T_DIR/" + started + "\"; exec sleep 1000"}));
  json lease;
  REQUIRE(await(
      [&] {
        auto holders = env.holders_of(resource);
        if (holders.size() == 1)
          lease = holders[0];
        return holders.size() == 1;
      },
      30s, 5ms));
  const std::vector<pid_t> guard = children_of(clock->pid());
  REQUIRE(guard.size() == 1);
  clock->signal(SIGKILL);
  CHECK(clock->wait(10s).status == 128 + SIGKILL);
  REQUIRE(await([&] { return !process_alive(guard[0]); }, 10s, 5ms));
  // Only a holder killed before its command shows that the trace comes
  // with the grant, not with the command.
  return fs::exists(env.path(started)) ? json() : lease;
}

// A history event's `by`: "" where there is none.
std::string by_of(const json& event) {
  return event.contains("by") && event.at("by").is_string() ? event.at("by").get<std::string>()
                                                            : "";
}

// The history event of `owner` named `name`, or null.
json event_of(const std::vector<json>& events, const std::string& owner, const std::string& name) {
  for (const auto& event : events) {
    if (event.value("owner", "") == owner && event.value("event", "") == name)
      return event;
  }
  return nullptr;
}

// The job's cgroup directory, where clock made one ("" elsewhere), read
// while it runs: to remove it once a test that killed its guard is done.
std::string cgroup_of(pid_t pid) {
  std::string text = read_file("/proc/" + std::to_string(pid) + "/cgroup");
  auto at = text.find("0::");
  if (at == std::string::npos)
    return "";
  std::string path = text.substr(at + 3);
  path = path.substr(0, path.find('\n'));
  if (path.find("clock-job-") == std::string::npos)
    return "";
  return "/sys/fs/cgroup" + path;
}

}  // namespace

TEST_SUITE("dead holder") {
  TEST_CASE(
      "a holder killed whole (clock, guard, job) frees its lock at once for this host's next -n, "
      "recorded as an expiry: holder died") {
    TestEnv env;
    Holder holder = start_holder(env);
    const std::string dead_owner = holder.lease.at("owner");
    kill_everything(holder);

    auto asked = Clock::now();
    Result next = env.clock({"run", "-n", "-r", "job", "--", "true"});
    double seconds = std::chrono::duration<double>(Clock::now() - asked).count();
    CHECK_EXIT(next, 0);
    MESSAGE("the next -n run on this host exited " << next.status << " after " << seconds << " s");

    auto history = history_of(env, "job");
    json expired = event_of(history, dead_owner, "expired");
    REQUIRE_MESSAGE(!expired.is_null(), "no expiry recorded for the dead holder");
    const std::string by = by_of(expired);
    CHECK_MESSAGE(by.find("holder died") != std::string::npos, by);
    CHECK_MESSAGE(by.find("pid " + std::to_string(next.pid)) != std::string::npos, by);
    // Ended by the request, long before the lease's own expiry (server clock).
    CHECK(epoch_ms(expired.at("at")) < epoch_ms(holder.lease.at("expires_at")));
    // The run that took it over happened: no skip is recorded.
    for (const auto& event : history)
      CHECK_MESSAGE(event.value("event", "") != "skipped", event.dump());
    int acquired = 0;
    for (const auto& event : history)
      acquired += event.value("event", "") == "acquired" ? 1 : 0;
    CHECK(acquired == 2);
  }

  TEST_CASE(
      "a holder killed after its grant, before its command started (its start ping hanging), "
      "frees its lock at once for this host's next -n") {
    TestEnv env;
    // A --ping URL whose start ping hangs for the ping's whole timeout.
    SilentPort port;
    const std::string url = "http://127.0.0.1:" + port.port() + "/ping/silent";
    json lease;
    std::string job;
    // A machine too slow to kill clock within that window (the command
    // then started) gets another try on another resource.
    for (int attempt = 1; attempt <= 3 && lease.is_null(); ++attempt) {
      job = "job" + std::to_string(attempt);
      lease = killed_before_command(env, url, job);
    }
    REQUIRE_MESSAGE(!lease.is_null(), "each time, the command started before clock was killed");

    CHECK_EXIT(env.clock({"run", "-n", "-r", job, "--", "true"}), 0);
    json expired = event_of(history_of(env, job), lease.at("owner"), "expired");
    REQUIRE_MESSAGE(!expired.is_null(), "no expiry recorded for the dead holder");
    CHECK_MESSAGE(by_of(expired).find("holder died") != std::string::npos, by_of(expired));
    CHECK(epoch_ms(expired.at("at")) < epoch_ms(lease.at("expires_at")));
  }

  TEST_CASE(
      "a waiter that has looked at a live holder on this host many times takes the lock over as "
      "soon as that holder is killed whole, recorded as an expiry: holder died") {
    TestEnv env;
    Holder holder = start_holder(env);
    const std::string dead_owner = holder.lease.at("owner");
    // Waiting behind a holder it sees running, it looks again and again
    // (on MariaDB every few tens of milliseconds) without asking the server
    // for the holder's trace again, until the holder's processes are gone.
    auto waiter = env.spawn(env.clock_command({"run", "-w", "60s", "-r", "job", "--", "true"}));
    REQUIRE(await([&] { return !env.status()["waiters"].empty(); }, 30s));
    kill_everything(holder);

    Result waited = waiter->wait(60s);
    CHECK_EXIT(waited, 0);
    json expired = event_of(history_of(env, "job"), dead_owner, "expired");
    REQUIRE_MESSAGE(!expired.is_null(), "no expiry recorded for the dead holder");
    CHECK_MESSAGE(by_of(expired).find("holder died") != std::string::npos, by_of(expired));
    CHECK(epoch_ms(expired.at("at")) < epoch_ms(holder.lease.at("expires_at")));
  }

  TEST_CASE(
      "a holder whose job outlived clock and its guard keeps its lock; once the job is gone too, "
      "this host's next -n takes it over") {
    TestEnv env;
    // A process of the job in the background: the command itself dies with
    // clock (its parent-death signal), this one only by the guard's hand.
    Holder holder = start_holder(env, "60s", "sleep 1000 & echo $! > \"$T_DIR/pid\"; wait");
    const std::string dead_owner = holder.lease.at("owner");
    const std::string cgroup = cgroup_of(holder.job);
    // The guard killed first, so that it cannot end the job when clock dies
    // (stopped instead, it would be woken: a process group that clock's
    // death orphans gets SIGHUP and SIGCONT when a member is stopped).
    kill(holder.group, SIGKILL);
    holder.clock->signal(SIGKILL);
    Result result = holder.clock->wait(10s);
    CHECK(result.status == 128 + SIGKILL);
    REQUIRE(await([&] { return !process_alive(holder.group); }, 10s, 5ms));
    REQUIRE(process_alive(holder.job));

    CHECK_EXIT(env.clock({"run", "-n", "-r", "job", "--", "true"}), 75);
    Result refused = env.clock({"acquire", "-v", "-n", "-r", "job"});
    CHECK_EXIT(refused, 75);
    CHECK_MESSAGE(
        refused.err.find("pid " + std::to_string(holder.clock->pid()) +
                         " is not running here, but its job still is") != std::string::npos,
        refused.err);
    CHECK_MESSAGE(refused.err.find("expires ") != std::string::npos, refused.err);
    CHECK(event_of(history_of(env, "job"), dead_owner, "expired").is_null());

    kill(holder.job, SIGKILL);
    REQUIRE(await([&] { return !process_alive(holder.job); }, 10s, 5ms));
    CHECK_EXIT(env.clock({"run", "-n", "-r", "job", "--", "true"}), 0);
    json expired = event_of(history_of(env, "job"), dead_owner, "expired");
    REQUIRE(!expired.is_null());
    CHECK(by_of(expired).find("holder died") != std::string::npos);
    if (!cgroup.empty())
      rmdir(cgroup.c_str());  // its guard, which removes it, was killed
  }

  TEST_CASE(
      "another host (another pid namespace of this kernel, as a container) is refused until the "
      "dead holder's TTL, and told when it expires") {
    TestEnv env;
    // Long enough that a loaded machine's first renewal comes within it.
    Holder holder = start_holder(env, "8s");
    const std::string dead_owner = holder.lease.at("owner");
    kill_everything(holder);

    auto elsewhere = [&](const std::vector<std::string>& args) {
      Command command = env.clock_command(args);
      auto prefix = another_pid_namespace();
      command.argv.insert(command.argv.begin(), prefix.begin(), prefix.end());
      return run(command, env.path("output"), 60s);
    };
    Result refused = elsewhere({"acquire", "-v", "-n", "-r", "job"});
    REQUIRE_EXIT(refused, 75);
    CHECK_MESSAGE(refused.err.find("expires ") != std::string::npos, refused.err);
    // That host cannot see the holder's pids, so it says nothing of them.
    CHECK_MESSAGE(refused.err.find("not running") == std::string::npos, refused.err);

    int refusals = 0;
    bool granted = await(
        [&] {
          Result attempt = elsewhere({"run", "-n", "-r", "job", "--", "true"});
          if (attempt.status == 75) {
            ++refusals;
            return false;
          }
          CHECK_EXIT(attempt, 0);
          return true;
        },
        60s, 100ms);
    REQUIRE(granted);
    CHECK(refusals > 0);
    auto history = history_of(env, "job");
    json expired = event_of(history, dead_owner, "expired");
    REQUIRE(!expired.is_null());
    CHECK(by_of(expired).find("holder died") == std::string::npos);
    CHECK(epoch_ms(expired.at("at")) >= epoch_ms(holder.lease.at("expires_at")));
  }
}
