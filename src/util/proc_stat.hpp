// The few fields clock reads from /proc/PID/stat.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>

namespace clk::util {

struct ProcStat {
  char state = 0;                // field 3: R, S, D, Z (zombie), X (dead)…
  pid_t parent = 0;              // field 4
  pid_t group = 0;               // field 5: the process group
  std::int64_t start_ticks = 0;  // field 22: start, in clock ticks after boot
};

// /proc/PID/stat of `pid` (a number, or a /proc entry's name); none when it
// is gone, hidden or unreadable. The command name, in parentheses, may hold
// spaces and ')', so the fields after it are counted from the last ')'.
std::optional<ProcStat> read_proc_stat(const std::string& pid);

// Whether a process in `state` has exited (a zombie runs nothing).
bool has_exited(char state);

}  // namespace clk::util
