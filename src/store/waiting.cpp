// The acquire loop shared by `clock acquire` and `clock run`.
#include "store/waiting.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "error.hpp"
#include "util/duration.hpp"

namespace clk::store {

using namespace std::chrono;

std::string describe_blockers(const Attempt& attempt, lock::Instant now) {
  if (!attempt.blocking_leases.empty()) {
    const auto& lease = attempt.blocking_leases.front();
    auto held = duration_cast<milliseconds>(now - lease.acquired_at);
    std::string text = lease.resource.str() + " is held by " + lease.info.host + " pid " +
                       std::to_string(lease.info.pid) + " (" + lease.info.user + ", owner " +
                       lease.owner.str() + ") for " + util::format_duration(held) + ", token " +
                       std::to_string(lease.token);
    if (attempt.blocking_leases.size() > 1) {
      text += ", and " + std::to_string(attempt.blocking_leases.size() - 1) + " more";
    }
    return text;
  }
  if (!attempt.blocking_waiters.empty()) {
    const auto& waiter = attempt.blocking_waiters.front();
    return std::to_string(attempt.blocking_waiters.size()) + " earlier request(s) wait for " +
           waiter.resource.str() + ", first " + waiter.info.host + " pid " +
           std::to_string(waiter.info.pid);
  }
  // No row explains it: another program holds these names in an open
  // transaction of its own (PostgreSQL functions called directly).
  return "another transaction holds locks under the same top-level name";
}

namespace {

// The record of a run that gave up waiting. Failing to write it changes
// nothing for the caller, who was not acquired either way (75): a warning.
void record_timed_out(Store& store, const LockRequest& request, const Attempt& attempt) {
  try {
    store.record_missed_run(request, EventKind::timed_out, in_the_way(attempt));
  } catch (const Error& error) {
    spdlog::warn("could not record the timed-out run in history: {}", error.what());
  }
}

}  // namespace

Acquired acquire(Store& store, const LockRequest& request, const WaitPolicy& policy,
                 WaitObserver* observer, const std::function<bool()>& interrupted) {
  const auto start = steady_clock::now();
  const auto deadline = policy.nonblock   ? start
                        : policy.max_wait ? start + *policy.max_wait
                                          : steady_clock::time_point::max();
  const bool queue = !policy.nonblock;
  // Waiters re-attempt often enough to keep their queue entry alive.
  const auto refresh = waiter_lifetime(request.ttl) / 4;
  struct Finish {
    WaitObserver* observer;
    ~Finish() {
      if (observer)
        observer->finished();
    }
  } finish{observer};
  for (;;) {
    auto attempt_start = steady_clock::now();
    Attempt attempt = store.try_acquire(request, queue);
    if (attempt.outcome == Outcome::granted)
      return {std::move(attempt.grants), attempt_start, std::nullopt};
    if (attempt.outcome == Outcome::done)
      return {{}, attempt_start, std::move(attempt.done_by)};
    if (attempt.outcome == Outcome::deadlock) {
      throw Error(ExitCode::deadlock, "deadlock: " + describe(attempt.cycle) +
                                          "; not waiting, so the other side can proceed");
    }
    auto now = steady_clock::now();
    auto waited = duration_cast<milliseconds>(now - start);
    if (now >= deadline) {
      if (queue) {
        store.leave_queue(request);
        if (request.record_refusal)
          record_timed_out(store, request, attempt);
      }
      auto blocker = describe_blockers(attempt, system_clock::now());
      throw Error(ExitCode::not_acquired, policy.nonblock
                                              ? "not acquired: " + blocker
                                              : "not acquired after waiting " +
                                                    util::format_duration(waited) + ": " + blocker);
    }
    if (observer)
      observer->blocked(attempt, waited);
    auto until = std::min({deadline, now + refresh,
                           observer ? observer->next_report() : steady_clock::time_point::max()});
    store.wait_for_change(until);
    if (interrupted && interrupted()) {
      store.leave_queue(request);
      throw Error(ExitCode::not_acquired, "interrupted while waiting; not acquired");
    }
  }
}

}  // namespace clk::store
