// What the fault tests share: instants of status/history JSON as numbers,
// a resource's history, ways to run a command where the kernel says no
// (without root's override of file permissions; in a private mount
// namespace), on a host whose wall clock is wrong, and against a port that
// never answers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness.hpp"

namespace clk::test {

// "2026-11-22T22:40:00.123Z" (clock's JSON instants) as milliseconds since the epoch.
std::int64_t epoch_ms(const std::string& iso8601);

// The one live holder of `resource` in `clock status --format json`; fails
// the test if there is not exactly one.
nlohmann::json only_holder(const TestEnv& env, const std::string& resource);

// The events of `clock history RESOURCE --format json`, oldest first.
std::vector<nlohmann::json> history_of(const TestEnv& env, const std::string& resource,
                                       const std::map<std::string, std::string>& extra_env = {});

// The events of `owner` among `events`, as their names ("acquired", "expired"…).
std::vector<std::string> event_names(const std::vector<nlohmann::json>& events,
                                     const std::string& owner);

// An argv prefix that runs a program without root's power to ignore file
// permissions (setpriv dropping CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from
// the bounding set), or nothing when not root: a read-only file is then
// read-only for clock too.
std::vector<std::string> without_permission_override();

// An argv prefix that runs a program in a private mount namespace (its
// mounts vanish with it), or an empty vector when unshare cannot make one.
std::vector<std::string> private_mounts(const TestEnv& env);

// An argv prefix that runs a program as if on another host that shares this
// one's kernel, disks and host name (a container): in a new pid namespace
// with its own /proc (`unshare --pid --fork --mount-proc`; not as root, in
// a user namespace too).
std::vector<std::string> another_pid_namespace();

// The bytes of the files whose names start with `prefix` in its folder (the
// database and its -wal; not the -shm index, which readers rewrite), name by
// name: to show that nothing changed.
std::map<std::string, std::string> snapshot_files(const fs::path& prefix);

// A TCP port on 127.0.0.1 that takes connections into its backlog and
// never accepts or answers them (the kernel completes the handshake): a
// server or ping receiver that hangs, until destroyed.
class SilentPort {
 public:
  SilentPort();
  ~SilentPort();
  SilentPort(const SilentPort&) = delete;
  SilentPort& operator=(const SilentPort&) = delete;
  const std::string& port() const { return m_port; }

 private:
  int m_fd = -1;
  std::string m_port;
};

// libfaketime's shared object, or an empty string when it is not installed.
std::string libfaketime_path();

// The environment of a process on a host whose wall clock is `offset` off
// ("+1h", "-30s"): libfaketime preloaded directly. Not through the faketime
// wrapper: it names a semaphore in /dev/shm after its own pid, a killed
// wrapper leaves it behind, and a later wrapper with the same pid refuses to
// start ("sem_open: File exists"). CLOCK_MONOTONIC stays right (setting the
// time never moves it; a shifted one stalls clock run's heartbeat wait), and
// an ASan build accepts libfaketime preloaded ahead of its runtime.
std::map<std::string, std::string> skewed_clock_env(const std::string& offset);

}  // namespace clk::test
