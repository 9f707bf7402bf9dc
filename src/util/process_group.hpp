// Whether a process group still has members, for waiting until a stopped
// command's whole group is gone (its grandchildren are not our children, so
// waitpid cannot see them).
#pragma once

#include <optional>
#include <sys/types.h>

namespace clk::util {

// True while a process other than `except` is in process group `group` and
// has not exited (zombies, which wait only to be reaped, do not count).
// Reads /proc: none when /proc cannot be read; a process that vanishes while
// it is read is taken as gone.
std::optional<bool> process_group_has_members(pid_t group, pid_t except);

}  // namespace clk::util
