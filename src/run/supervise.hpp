// clock run's child supervision: spawn the command with the terminal and stdio
// unchanged, forward signals, keep the lease alive, apply the lease-lost
// policy, and pass the child's exit status through (man clock, COMMANDS).
#pragma once

#include <chrono>
#include <functional>
#include <vector>

#include "run/guard.hpp"
#include "run/options.hpp"
#include "run/timing.hpp"

namespace clk::run {

// How the command's run ended, for what comes after it (the release).
struct RunEnd {
  int status = 0;  // what clock exits with, unless what comes after finds otherwise
  bool stopped_for_lost_lease = false;  // the child was stopped and the loss reported (79)
  // The last moment the lease is known to have been held (Heartbeat::last_held;
  // the grant with --ttl 0): a loss found afterwards happened after it.
  std::chrono::steady_clock::time_point last_held;
  // The processes the command left running when it exited, with what became
  // of each (waited for or ended); empty when it left none.
  std::vector<lock::Leftover> leftovers;
  // How the command itself ended, as waitpid(2) gives it (WIFEXITED, WEXITSTATUS,
  // WTERMSIG), whatever clock exits with (79, 124): what history records.
  int wait_status = 0;
};

// Runs once the child is gone; returns the status clock exits with.
using AfterChild = std::function<int(const RunEnd& end)>;

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
// stopped, given how it ended (the release goes there), while the guard
// process exits beside it; what it returns is what supervise() returns.
int supervise(const RunOptions& options, const Renew& renew,
              std::chrono::steady_clock::time_point first_renewal_start,
              const AfterChild& after_child = {});

// The same with the guard process forked earlier by the caller (`clock run`
// forks it before it connects and waits, not between a grant and the
// child's start: the hand-over path), and with a
// check between renewals that finds a lost lease sooner.
int supervise(const RunOptions& options, Guard& guard, const LeaseKeeping& lease,
              std::chrono::steady_clock::time_point first_renewal_start,
              const AfterChild& after_child);

}  // namespace clk::run
