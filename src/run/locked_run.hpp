// clock run once its locks are granted: the command runs as a supervised
// child while its leases are renewed, then they are released, and the
// outcome becomes clock run's exit status (man clock, COMMANDS and EXIT STATUS). cmd/run.cpp parses
// the flags, acquires and calls run_locked().
#pragma once

#include <functional>
#include <string>

#include "run/guard.hpp"
#include "run/options.hpp"
#include "store/store.hpp"
#include "store/waiting.hpp"

namespace clk::run {

// The locks a run holds and what acts in their owner's name need.
struct HeldLocks {
  store::LockRequest request;    // what was granted: resources, owner, secret, TTL
  std::string owner_credential;  // CLOCK_OWNER for the command: ID.SECRET
  store::Acquired acquired;      // the grants (tokens, depths) and when the attempt began
  // This process as the caller of the renewals and the release.
  std::function<store::Caller()> caller;
  // More work while the command runs (declaring its expected period), off
  // the path of its start; none: nothing more.
  std::function<void()> beside_command = {};
  // Called once the command exited 0, before the release, while the leases
  // are still held (declaring a changed expected period); none: nothing.
  std::function<void()> after_success = {};
  // Called with the exit status once the leases are released, before clock
  // may leave with _exit (the ping of the job's end); none: nothing.
  std::function<void(int status)> after_release = {};
};

// Runs options.argv under `held`: adds CLOCK_OWNER, CLOCK_RESOURCE and
// CLOCK_TOKEN to its environment, renews the leases while it runs (through
// `store`, from the heartbeat thread only), records a run stopped at
// --max-runtime as killed, releases when it ends and returns the status clock
// exits with: the command's, or 79 when the release finds that the command
// ran unprotected. Where the store allows it, leaves with _exit after the
// release instead of returning (util::quick_exit_if_possible). `guard` is the
// guard forked before the store was opened.
int run_locked(RunOptions options, Guard& guard, store::Store& store, const HeldLocks& held);

}  // namespace clk::run
