// What tells a process apart from every other one this host ever ran: the
// host's boot, the pid namespace its pid is counted in, the pid, and when the
// process started. A pid alone is reused; a pid with its start time is not,
// within one boot. Used to judge, on a lease holder's own host, that the
// holder is gone (docs/dead-holder.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>

namespace clk::util {

// This boot's random id (/proc/sys/kernel/random/boot_id): new at every
// boot, shared by every container on the kernel. None when unreadable.
std::optional<std::string> boot_id();

// The inode of this process's pid namespace (/proc/self/ns/pid): two
// containers on one kernel differ here unless they share their pids. None
// when /proc is not this namespace's own (a pid namespace entered without
// mounting its /proc counts pids of another), so pids here could not be
// judged.
std::optional<std::int64_t> pid_namespace();

// When process `pid` started, in clock ticks after boot (/proc/PID/stat
// field 22). None when it does not run (or cannot be seen).
std::optional<std::int64_t> process_start_ticks(pid_t pid);

enum class Presence { running, gone, unknown };

// Whether the process `pid` that started at `start_ticks` still runs: gone
// when no process has that pid (ESRCH), or the one that has it started at
// another time (the pid was reused), or it has exited and waits only to be
// reaped (a zombie); unknown when it cannot be told (a
// process of another user hidden by hidepid).
Presence process_presence(pid_t pid, std::int64_t start_ticks);

// Whether the cgroup v2 directory `path` (under /sys/fs/cgroup) still holds
// a process: false when it is gone or empty; none when it cannot be read or
// `path` is not a cgroup path.
std::optional<bool> cgroup_has_processes(const std::string& path);

}  // namespace clk::util
