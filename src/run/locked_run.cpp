// clock run once its locks are granted: the command as a supervised child,
// its leases renewed while it runs and released when it ends.
#include "run/locked_run.hpp"

#include <sys/wait.h>

#include <spdlog/spdlog.h>

#include "error.hpp"
#include "output/text.hpp"
#include "run/supervise.hpp"
#include "util/quick_exit.hpp"

namespace clk::run {

namespace {

std::string joined_tokens(const std::vector<store::Grant>& grants) {
  std::string out;
  for (const auto& grant : grants) {
    if (!out.empty())
      out += ',';
    out += std::to_string(grant.token);
  }
  return out;
}

// The leases the heartbeat keeps: every resource, under the tokens granted.
// Without the caller: keep_lease() adds it (its lineage is read while the
// command runs, not between the grant and the command's start).
store::RenewRequest held_leases(const HeldLocks& held) {
  store::RenewRequest renewal;
  renewal.ns = held.request.ns;
  renewal.resources = held.request.resources;
  renewal.owner = held.request.owner;
  renewal.secret = held.request.secret;
  renewal.ttl = held.request.ttl;
  for (const auto& grant : held.acquired.grants)
    renewal.tokens.push_back(grant.token);
  return renewal;
}

// The heartbeat's calls: renew every resource keeping the tokens, and, where
// the store can tell cheaply, check between renewals that they are still
// held, and give the connection back between renewals. All run on the
// supervisor's heartbeat thread, the only user of
// `store` while the child runs; their errors are the heartbeat's to report.
LeaseKeeping keep_lease(store::Store& store, const store::RenewRequest& renewal,
                        const std::function<store::Caller()>& caller) {
  LeaseKeeping keeping;
  keeping.renew = [&store, renewal, caller] {
    auto request = renewal;
    request.caller = caller();
    store.renew(request);
    return RenewOutcome::renewed;
  };
  keeping.check_interval = store.still_holds_interval();
  if (keeping.check_interval)
    keeping.still_holds = [&store, renewal] { return store.still_holds(renewal); };
  keeping.rest_after = store.idle_limit();
  if (keeping.rest_after)
    keeping.rest = [&store] { store.rest(); };
  keeping.note_leftovers = [&store, renewal, caller](const std::vector<lock::Leftover>& left) {
    store::LeftoversNote note{renewal, left};
    note.held.caller = caller();
    store.note_leftovers(note);
  };
  return keeping;
}

// The steady-clock instant `at` on the wall clock, for messages.
std::string wall_clock(std::chrono::steady_clock::time_point at) {
  auto ago = std::chrono::steady_clock::now() - at;
  return output::iso8601(std::chrono::time_point_cast<std::chrono::system_clock::duration>(
      std::chrono::system_clock::now() - ago));
}

// A run stopped at its --max-runtime is history (`killed`). Failing to write
// it changes nothing for the caller (exit 124 either way): a warning.
void record_killed(store::Store& store, const store::LockRequest& request) {
  try {
    store.record_missed_run(request, store::EventKind::killed, std::nullopt);
  } catch (const Error& error) {
    spdlog::warn("could not record the killed run in history: {}", error.what());
  }
}

// The processes the command left, with what became of each, on the lease
// just before its release, which copies them into its history record.
// Failing to write them changes nothing for the run: a warning.
void record_leftovers(store::Store& store, const HeldLocks& held, const RunEnd& end) {
  if (end.leftovers.empty() || end.stopped_for_lost_lease)
    return;
  store::LeftoversNote note{held_leases(held), end.leftovers};
  note.held.caller = held.caller();
  try {
    store.note_leftovers(note);
  } catch (const Error& error) {
    spdlog::warn("could not record in history what the command left running: {}", error.what());
  }
}

store::RunExit run_exit_of(int wait_status) {
  if (WIFSIGNALED(wait_status))
    return {std::nullopt, WTERMSIG(wait_status)};
  return {WEXITSTATUS(wait_status), 0};
}

// Releases after the command; a lease found lost then means the command ran
// unprotected for part of its run: exit 79 (man clock, EXIT STATUS), saying since when.
int release_after_run(store::Store& store, const HeldLocks& held, const RunEnd& end) {
  store::ReleaseRequest release;
  release.ns = held.request.ns;
  release.resources = held.request.resources;
  release.owner = held.request.owner;
  // How the command ended is recorded with the release. A run counts for
  // --once-per when its command exited 0 and its lease is still held at the
  // release (a lost run does not count: the store refuses), so that what
  // history calls succeeded and what --once-per counts are one notion.
  release.exit = run_exit_of(end.wait_status);
  release.succeeded = release.exit->succeeded() && !end.stopped_for_lost_lease;
  release.secret = held.request.secret;
  release.caller = held.caller();
  // What it holds, so that a release whose reply a failover lost is looked
  // up and sent again rather than left to expire (store.hpp).
  for (const auto& grant : held.acquired.grants) {
    release.tokens.push_back(grant.token);
    release.depths.push_back(grant.depth);
  }
  // Renewed no later than last_held, so it lapses by then + TTL (the margin
  // covers the renewal's own round trip).
  if (held.request.ttl > std::chrono::milliseconds(0))
    release.expires_by = end.last_held + held.request.ttl + std::chrono::seconds(1);
  record_leftovers(store, held, end);
  if (release.succeeded && held.after_success)
    held.after_success();
  try {
    store.release(release);
  } catch (const Error& error) {
    if (end.stopped_for_lost_lease)
      return end.status;  // already reported
    if (error.code() != ExitCode::not_owner) {
      spdlog::warn("releasing after the command: {}", error.what());
      return end.status;
    }
    spdlog::error(
        "the command finished with status {} but ran unprotected since {}, when its lease was "
        "last known held: {}; another holder may have run beside it",
        end.status, wall_clock(end.last_held), error.what());
    return exit_status(ExitCode::lease_lost);
  }
  return end.status;
}

}  // namespace

int run_locked(RunOptions options, Guard& guard, store::Store& store, const HeldLocks& held) {
  options.extra_env = {{"CLOCK_OWNER", held.owner_credential},
                       {"CLOCK_RESOURCE", lock::join(held.request.resources, ",")},
                       {"CLOCK_TOKEN", joined_tokens(held.acquired.grants)}};
  auto keeping = keep_lease(store, held_leases(held), held.caller);
  // Recorded before the release, while the lease is still held.
  options.on_out_of_time = [&] { record_killed(store, held.request); };
  // While the command runs: this process's facts as a caller (its
  // ancestors' /proc files, some 30 system calls) for the renewals and the
  // release, and whatever the store would otherwise do later.
  options.beside_command = [&] {
    held.caller();
    if (held.beside_command)
      held.beside_command();
    store.use_idle_time();
  };
  int status = supervise(options, guard, keeping, held.acquired.attempt_start,
                         [&](const RunEnd& end) { return release_after_run(store, held, end); });
  if (held.after_release)
    held.after_release(status);
  // The release is done and the guard stood down: where the store allows
  // it, no closing, no reaping of the guard (a wait for the kernel to end
  // it), no freeing of every object.
  if (store.may_exit_without_closing())
    util::quick_exit_if_possible(status);
  return status;
}

}  // namespace clk::run
