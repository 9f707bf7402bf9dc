// What `clock run` needs to supervise a child: the command, its extra
// environment, the lease timings, the lease-lost policy and the runtime
// limit (man clock, COMMANDS).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lock/lease.hpp"

namespace clk::run {

using std::chrono::milliseconds;

enum class LeaseLostPolicy { kill, warn };

// What becomes of the processes a command leaves running when it exits (a
// daemon it started, a `nohup … &`): the lock covers them either way, and is
// released only once none is left (docs/whole-job.md).
enum class Leftovers {
  kill,  // SIGTERM, SIGKILL after --kill-after, then release (the default, as
         // systemd's KillMode=control-group: a cron job's lock is never held
         // indefinitely by a straggler)
  wait,  // keep the lease renewed until they exit by themselves
};

// What one renewal attempt found.
enum class RenewOutcome {
  renewed,      // the lease now lasts another TTL from the attempt's start
  lost,         // the lease is gone or another owner's (not_owner): no retry helps
  unavailable,  // the backend could not be asked, or the answer was lost: retry
};

// The --heartbeat and --kill-after when neither flag nor config file sets
// them. Both scale with the TTL so that a run rides out a database outage of
// at least half its TTL (for a TTL of 500ms or more): the outage ridden out
// is ttl - kill_after - safety margin - heartbeat, and a tenth each plus a
// margin of at most a twentieth leave three quarters.
// The heartbeat: ttl/10, at least 100ms so that a tiny TTL does not hammer
// the database.
milliseconds default_heartbeat(milliseconds ttl);
// The grace between SIGTERM and SIGKILL: ttl/10, at most 10s; 10s without a
// TTL, where it only paces --max-runtime's stop.
milliseconds default_kill_after(milliseconds ttl);

struct RunOptions {
  std::vector<std::string> argv;                 // the command and its arguments
  std::map<std::string, std::string> extra_env;  // CLOCK_OWNER, CLOCK_RESOURCE, CLOCK_TOKEN
  milliseconds ttl = lock::k_default_ttl;        // 0: no expiry, no renewals
  milliseconds heartbeat = default_heartbeat(lock::k_default_ttl);
  milliseconds kill_after = default_kill_after(lock::k_default_ttl);
  LeaseLostPolicy on_lease_lost = LeaseLostPolicy::kill;
  Leftovers leftovers = Leftovers::kill;  // --leftovers
  milliseconds max_runtime{0};  // --max-runtime: stop the command after this long; 0: no limit
  // Called once --max-runtime has stopped the command, its group is gone and
  // the renewals have stopped, before `after_child`: where the run records
  // that it was killed. Optional.
  std::function<void()> on_out_of_time;
  // Called once on the main thread just after the command has started and
  // before the heartbeat does, so nothing else uses the store meanwhile: work
  // the store would otherwise do later where someone waits (the release).
  // Optional; must not throw.
  std::function<void()> beside_command;
  std::string lease_name;  // for messages only: the resource name(s); may be empty
};

// Called on the heartbeat thread only; must not touch state the main thread
// uses. A clk::Error(not_owner) it throws counts as `lost`, any other
// exception as `unavailable`.
using Renew = std::function<RenewOutcome()>;

// Whether the lease is still held, asked between renewals on the heartbeat
// thread: false once it is found gone, expired or another token's. An
// exception means "cannot tell now": the next renewal decides.
using StillHolds = std::function<bool()>;

// How the heartbeat keeps the lease and watches for its loss.
struct LeaseKeeping {
  Renew renew;
  StillHolds still_holds;  // empty: a loss is found by the next renewal
  // How often to ask still_holds; none: never (the backend has no cheap check).
  std::optional<milliseconds> check_interval;
  // Closes the backend's connection between renewals once it has been idle
  // for rest_after (a renewal borrows one); empty: nothing to close.
  std::function<void()> rest;
  std::optional<milliseconds> rest_after;
  // Records on the lease the processes the command left (--leftovers wait,
  // so that `clock status` shows them); empty: not recorded. Throws like
  // renew.
  std::function<void(const std::vector<lock::Leftover>&)> note_leftovers;
};

}  // namespace clk::run
