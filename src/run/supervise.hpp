// clock run's child supervision: spawn the command with the terminal and stdio
// unchanged, forward signals, keep the lease alive, apply the lease-lost
// policy, and pass the child's exit status through (SPEC §3).
#pragma once

#include <chrono>
#include <functional>

#include "run/guard.hpp"
#include "run/options.hpp"
#include "run/timing.hpp"

namespace clk::run {

// Runs the command to completion. Returns the exit status clock should exit
// with: the child's, 128+N for a child killed by signal N, 126/127 when it
// could not be executed, 79 when the lease was lost and the child stopped, or
// 124 when --max-runtime stopped it (only once its whole group is gone).
// `first_renewal_start` is when the grant's transaction began, on the steady
// clock: the first deadline counts from there.
//
// Call it on the main thread, before any other thread of clock's is started
// that could fork or change signal dispositions; one call at a time. Throws
// clk::Error(usage) for an empty argv or timings check_timing refuses, and
// clk::Error(cannot_execute) when the process limits forbid a fork.
// `after_child` (optional) runs once the child is gone and the renewals have
// stopped, given the status clock will exit with (the release goes there),
// while the guard process exits beside it.
int supervise(const RunOptions& options, const Renew& renew,
              std::chrono::steady_clock::time_point first_renewal_start,
              const std::function<void(int status)>& after_child = {});

// The same with the guard process forked earlier by the caller: `clock run`
// forks it before it connects and waits, while clock is small and not
// between a grant and the child's start (the hand-over path).
int supervise(const RunOptions& options, Guard& guard, const Renew& renew,
              std::chrono::steady_clock::time_point first_renewal_start,
              const std::function<void(int status)>& after_child);

}  // namespace clk::run
