// What clock run records on its leases so that a request from the holder's
// own host can tell that the holder died (store/dead_holder.hpp,
// docs/dead-holder.md).
#pragma once

#include <cstdint>
#include <string>

namespace clk::store {

// The holder's host's boot and pid namespace, clock's pid and its start
// time (a pid is reused, a pid with its start time is not), and where its
// job's processes are.
struct HolderTrace {
  std::string boot_id;         // /proc/sys/kernel/random/boot_id
  std::int64_t pid_ns = 0;     // inode of /proc/self/ns/pid
  std::int64_t pid = 0;        // clock's pid there (the lease's pid)
  std::int64_t pid_start = 0;  // its start, in clock ticks after boot (/proc/PID/stat)
  std::int64_t job_group = 0;  // the job's process group (the guard's); 0: none
  std::string job_cgroup;      // the job's cgroup directory; "": none
  bool operator==(const HolderTrace&) const = default;
};

}  // namespace clk::store
