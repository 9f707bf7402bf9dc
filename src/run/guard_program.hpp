// The guard program (guard/clock_guard.c): finding it, and starting it
// without making clock wait for its exec.
#pragma once

#include <optional>
#include <string>
#include <sys/types.h>

namespace clk::run {

// The guard's end of its socket pair, in the guard (guard/clock_guard.c
// expects it there too).
inline constexpr int k_guard_fd = 3;

// The guard program's path; none when it is not installed.
std::optional<std::string> find_guard_program();

// Starts `program` as the leader of a new process group, with `socket` as its
// fd 3 and every signal blocked. Returns its pid, possibly before it has even
// exec'd: it writes one byte to the socket once it guards, and the socket
// reads end-of-file instead when it could not start. -1: no process.
pid_t launch_guard_program(const std::string& program, int socket);

}  // namespace clk::run
