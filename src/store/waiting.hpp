// Where --wait, --nonblock and the wait-forever default take effect: attempts
// on the store, queued, woken by the store's change signal, until granted, a
// deadline, a deadlock or an interrupt.
#pragma once

#include <chrono>
#include <functional>
#include <optional>

#include "store/store.hpp"

namespace clk::store {

struct WaitPolicy {
  bool nonblock = false;                 // -n: one attempt, no queueing
  std::optional<milliseconds> max_wait;  // -w D; none: wait forever (as flock does)
  // Without -w: the longest stretch of server trouble (unreachable, full,
  // restarting, read-only) tried before giving up, so that cron does not
  // stack one more waiting process every hour of an outage; none: forever.
  // A held lock is still waited for forever. -n and -w D have their own
  // (k_nonblock_patience, D). The config's database_patience (5m by default)
  // or --db-patience.
  std::optional<milliseconds> database_patience;
};

// Told about a blocked request, so it can name the holder to the operator.
class WaitObserver {
 public:
  virtual ~WaitObserver() = default;
  // Called after each blocked attempt and at the times next_report() asks for.
  virtual void blocked(const Attempt& attempt, milliseconds waited) = 0;
  // When the observer next wants to be called even if nothing changed.
  virtual std::chrono::steady_clock::time_point next_report() const = 0;
  // The wait is over (granted or not).
  virtual void finished() {}
};

struct Acquired {
  std::vector<Grant> grants;  // in request order
  // When the granting attempt began, on this host's steady clock: the lease
  // lasts at least its TTL from this instant, so deadlines count from it.
  std::chrono::steady_clock::time_point attempt_start;
  // --once-per: nothing granted, a successful run already did the period.
  std::optional<PeriodRun> done_by;
};

// How long -n keeps trying through server trouble (a full, starting or
// restarting server, a connection lost): the lock was never asked, so the
// answer may come late, but not much later than the connect timeout.
inline constexpr milliseconds k_nonblock_patience{5'000};

// Returns the grants, or (--once-per) the run that did the period. A backend
// that is unavailable (a full, restarting or read-only server, a lost
// connection) is retried with jittered back-off until the -w deadline
// (k_nonblock_patience with -n; without either, until the trouble has lasted
// policy.database_patience), then its last error is thrown (unavailable, 69). Throws clk::Error:
// not_acquired (75) naming the holder when -n fails or the wait times out, deadlock (76) naming the
// cycle. `interrupted` is polled between attempts; when it returns true the request leaves the
// queue and Error(not_acquired) is thrown.
Acquired acquire(Store& store, const LockRequest& request, const WaitPolicy& policy,
                 WaitObserver* observer, const std::function<bool()>& interrupted);

// One line naming who or what stands in the way of a blocked attempt.
std::string describe_blockers(const Attempt& attempt, lock::Instant now);

}  // namespace clk::store
