// The acquire loop shared by `clock acquire` and `clock run`.
#include "store/waiting.hpp"

#include <algorithm>
#include <ctime>
#include <thread>

#include <spdlog/spdlog.h>

#include "error.hpp"
#include "store/dead_holder.hpp"
#include "util/backoff.hpp"
#include "util/duration.hpp"

namespace clk::store {

using namespace std::chrono;

namespace {

// When a lease in the way frees by itself: what a caller from another host
// (which cannot tell that its holder died) waits for.
std::string expiry_text(const lock::Lease& lease, lock::Instant now) {
  if (!lease.expires_at)
    return "no expiry (--ttl 0)";
  auto left = duration_cast<milliseconds>(*lease.expires_at - now);
  const std::time_t at = system_clock::to_time_t(*lease.expires_at);
  std::tm utc{};
  char text[32] = "?";
  if (gmtime_r(&at, &utc) != nullptr)
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return std::string("expires ") + text + " (in " +
         util::format_duration(std::max(left, milliseconds(0))) + ")";
}

}  // namespace

std::string describe_blockers(const Attempt& attempt, lock::Instant now) {
  if (!attempt.blocking_leases.empty()) {
    const auto& lease = attempt.blocking_leases.front();
    auto held = duration_cast<milliseconds>(now - lease.acquired_at);
    std::string text = lease.resource.str() + " is held by " + lease.info.host + " pid " +
                       std::to_string(lease.info.pid) + " (" + lease.info.user + ", owner " +
                       lease.owner.str() + ") for " + util::format_duration(held) + ", token " +
                       std::to_string(lease.token) + ", " + expiry_text(lease, now);
    if (attempt.blocking_leases.size() > 1) {
      text += ", and " + std::to_string(attempt.blocking_leases.size() - 1) + " more";
    }
    return text;
  }
  if (!attempt.blocking_waiters.empty()) {
    const auto& waiter = attempt.blocking_waiters.front();
    const int count =
        attempt.waiters_ahead.value_or(static_cast<int>(attempt.blocking_waiters.size()));
    std::string how_many = std::to_string(count);
    if (attempt.waiters_ahead && count >= k_waiters_ahead_counted)
      how_many = "at least " + how_many;
    return how_many + " earlier request(s) wait for " + waiter.resource.str() + ", first " +
           waiter.info.host + " pid " + std::to_string(waiter.info.pid);
  }
  // No row explains it: a session holds clock's rows of this hierarchy in an
  // open transaction of its own (PostgreSQL functions called directly), and
  // clock's bounded wait for them ran out.
  if (attempt.behind_transaction)
    return *attempt.behind_transaction;
  return "nothing recorded stands in the way";
}

namespace {

// A store's own "(gave up after trying for …)" (one call's patience) gives
// way to the whole wait's, so a message says it once.
std::string without_give_up_note(std::string message) {
  auto at = message.rfind(" (gave up after trying for ");
  if (at != std::string::npos && message.ends_with(')'))
    message.erase(at);
  return message;
}

// The record of a run that gave up waiting. Failing to write it changes
// nothing for the caller, who was not acquired either way (75): a warning.
void record_timed_out(Store& store, const LockRequest& request, const Attempt& attempt) {
  try {
    store.record_missed_run(request, EventKind::timed_out, in_the_way(attempt));
  } catch (const Error& error) {
    spdlog::warn("could not record the timed-out run in history: {}", error.what());
  }
}

// Leaving the queue after the wait is over. A failure leaves an entry that
// expires within its lifetime (waiter_lifetime): a warning, not the outcome.
void leave_queue(Store& store, const LockRequest& request) {
  try {
    store.leave_queue(request);
  } catch (const Error& error) {
    if (error.code() != ExitCode::unavailable)
      throw;
    spdlog::warn("could not leave the wait queue (the entry expires by itself): {}", error.what());
  }
}

// The backend's trouble so far in one acquire.
struct Trouble {
  util::Backoff backoff;
  steady_clock::time_point since{};  // none: the last attempt answered
  bool warned = false;
};

// How long server trouble is tried, and what set that bound (for the
// message when it runs out).
struct Patience {
  steady_clock::time_point until;
  std::string setting;  // "" for -w and -n, whose bound the caller chose knowingly
};

// One attempt; an unavailable backend is retried with back-off until
// `patience`, then its error is thrown with how long it was tried. Returns
// nullopt after a failed try and the back-off (the caller tries again).
std::optional<Attempt> attempt_through_trouble(Store& store, const LockRequest& request, bool queue,
                                               const Patience& patience,
                                               steady_clock::time_point start, Trouble& trouble,
                                               const std::function<bool()>& interrupted) {
  auto& [backoff, trouble_since, warned] = trouble;
  const auto began = steady_clock::now();
  try {
    Attempt attempt = store.try_acquire(request, queue);
    backoff.reset();
    trouble_since = {};
    warned = false;
    return attempt;
  } catch (const Error& error) {
    if (error.code() != ExitCode::unavailable)
      throw;
    auto now = steady_clock::now();
    if (trouble_since == steady_clock::time_point{})
      trouble_since = began;  // the store may have tried through it until now
    // A last try comes just before the deadline, not a back-off step early.
    constexpr milliseconds k_last_try{100};
    auto left = patience.until - now;
    if (left <= k_last_try) {
      // With database_patience, how long this trouble lasted, not the wait.
      auto tried =
          duration_cast<milliseconds>(now - (patience.setting.empty() ? start : trouble_since));
      backoff.reset();
      trouble_since = {};
      warned = false;
      throw Error(ExitCode::unavailable, without_give_up_note(error.what()) +
                                             " (gave up after trying for " +
                                             util::format_duration(tried) + patience.setting + ")");
    }
    auto delay = std::min<steady_clock::duration>(backoff.next(), left - k_last_try);
    // Said once the trouble lasts, so cron mails a long outage but not a blip.
    if (!warned && now - trouble_since >= k_long_trouble) {
      spdlog::warn("{}; still trying", error.what());
      warned = true;
    } else {
      spdlog::info("{}; trying again in {}", error.what(),
                   util::format_duration(duration_cast<milliseconds>(delay)));
    }
    auto until = now + delay;
    while (steady_clock::now() < until) {
      if (interrupted && interrupted()) {
        throw Error(ExitCode::not_acquired, "interrupted while waiting; not acquired");
      }
      std::this_thread::sleep_for(
          std::min<steady_clock::duration>(until - steady_clock::now(), milliseconds(100)));
    }
    return std::nullopt;
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
  Trouble trouble;
  // Server trouble is waited out until the wait's deadline; -n, which never
  // waits for the lock, gives it a few seconds; a wait without -w gives it
  // database_patience from the moment the trouble began (a held lock is
  // still waited for forever).
  auto patience = [&]() -> Patience {
    if (policy.nonblock)
      return {start + k_nonblock_patience, ""};
    if (policy.max_wait || !policy.database_patience)
      return {deadline, ""};
    auto since = trouble.since == steady_clock::time_point{} ? steady_clock::now() : trouble.since;
    return {since + *policy.database_patience,
            "; database_patience is " + util::format_duration(*policy.database_patience)};
  };
  // A -n run's refusal is history, written by the attempt that is refused:
  // the first attempt leaves it out, so that a refusal by a dead holder's
  // lease, which this host then ends (dead_holder.hpp), is not recorded as a
  // run that did not happen; a refusal that stands is tried once more,
  // recorded.
  LockRequest unrecorded = request;
  bool recorded = !(policy.nonblock && request.record_refusal);
  unrecorded.record_refusal = false;
  DeadHolderWatch holders_in_the_way;
  DeadHolderReport dead;
  bool looked_already = false;
  // Waiters re-attempt often enough to keep their queue entry alive: the
  // entry is rewritten once half its lifetime is gone, so at a third every
  // other attempt writes it and one late attempt still finds it alive.
  const auto refresh = waiter_lifetime(request.ttl) / 3;
  struct Finish {
    WaitObserver* observer;
    ~Finish() {
      if (observer)
        observer->finished();
    }
  } finish{observer};
  for (;;) {
    auto attempt_start = steady_clock::now();
    Patience bound = patience();
    store.set_acquire_deadline(bound.until);
    std::optional<Attempt> tried = attempt_through_trouble(
        store, recorded ? request : unrecorded, queue, bound, start, trouble, interrupted);
    if (!tried)
      continue;
    Attempt attempt = std::move(*tried);
    if (attempt.outcome == Outcome::granted)
      return {std::move(attempt.grants), attempt_start, std::nullopt};
    if (attempt.outcome == Outcome::done)
      return {{}, attempt_start, std::move(attempt.done_by)};
    if (attempt.outcome == Outcome::deadlock) {
      throw Error(ExitCode::deadlock, "deadlock: " + describe(attempt.cycle) +
                                          "; not waiting, so the other side can proceed");
    }
    // The recorded retry of -n follows at once: what this host found of the
    // holders in the way a moment ago stands.
    if (!looked_already) {
      dead = holders_in_the_way.end_dead_holders(store, request, attempt);
      if (dead.ended > 0)
        continue;
    }
    if (!recorded) {
      recorded = true;
      looked_already = true;
      continue;
    }
    auto now = steady_clock::now();
    auto waited = duration_cast<milliseconds>(now - start);
    if (now >= deadline) {
      if (queue) {
        leave_queue(store, request);
        if (request.record_refusal)
          record_timed_out(store, request, attempt);
      }
      auto blocker = describe_blockers(attempt, system_clock::now());
      if (!dead.first_found.empty())
        blocker += "; " + dead.first_found;
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
      leave_queue(store, request);
      throw Error(ExitCode::not_acquired, "interrupted while waiting; not acquired");
    }
  }
}

}  // namespace clk::store
