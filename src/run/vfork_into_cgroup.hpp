// Starting a process in the job's cgroup without copying clock: clone3 with
// CLONE_INTO_CGROUP, and, on x86-64, CLONE_VM | CLONE_VFORK as vfork and
// posix_spawn do, the child running on a stack of its own.
#pragma once

#include <sys/types.h>

namespace clk::run {

// What the child runs: async-signal-safe calls only, ending in exec or
// _exit. It shares clock's memory until then, and clock waits meanwhile.
using ChildBody = void (*)(void* context);

// Starts `body(context)` in a new process made in the cgroup `cgroup_fd`
// and returns its pid once the child has exec'd or exited; -1 with errno set
// if clone3 refused (ENOSYS where a seccomp filter refuses clone3, as some
// container runtimes do). Where the architecture has no such start here, the
// child is a copy of clock, as fork makes. Call with the signals whose
// handlers must not run in the child blocked, before any thread is started.
pid_t vfork_into_cgroup(int cgroup_fd, ChildBody body, void* context);

}  // namespace clk::run
