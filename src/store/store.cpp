// Names of history events and run exits, and who was in the way of a run that did not happen.
#include "store/store.hpp"

#include <algorithm>
#include <cstring>

#include "lock/limits.hpp"

namespace clk::store {

int waiters_ahead(int counted, std::optional<std::int64_t> mine,
                  std::optional<std::int64_t> front) {
  if (counted >= k_waiters_ahead_counted && mine && front && *mine > *front)
    return static_cast<int>(std::min<std::int64_t>(*mine - *front, 1'000'000));
  return counted;
}

milliseconds waiter_lifetime(milliseconds ttl) {
  constexpr milliseconds k_longest{30'000};
  constexpr milliseconds k_shortest{1'000};
  if (ttl.count() == 0)
    return k_longest;
  return std::clamp(ttl, k_shortest, k_longest);
}

std::string_view to_string(EventKind kind) {
  switch (kind) {
    case EventKind::acquired:
      return "acquired";
    case EventKind::released:
      return "released";
    case EventKind::expired:
      return "expired";
    case EventKind::forced:
      return "forced";
    case EventKind::lost:
      return "lost";
    case EventKind::skipped:
      return "skipped";
    case EventKind::timed_out:
      return "timed_out";
    case EventKind::killed:
      return "killed";
    case EventKind::refused:
      return "refused";
    case EventKind::period_changed:
      return "period_changed";
  }
  return "unknown";
}

std::string describe(const Caller& caller) {
  return lock::bounded(caller.user + "@" + caller.host + " pid " + std::to_string(caller.pid),
                       lock::k_max_by_bytes);
}

std::string by_of(const Caller& caller, const lock::OwnerInfo& holder) {
  bool same_tree =
      caller.host == holder.host &&
      std::find(caller.lineage.begin(), caller.lineage.end(), holder.pid) != caller.lineage.end();
  return same_tree ? std::string() : describe(caller);
}

std::string describe(const RunExit& exit) {
  if (exit.code)
    return "exit " + std::to_string(*exit.code);
  // Named by this host: a record is read where the number means the same
  // (Linux numbers its common signals alike on every architecture clock
  // builds for).
  const char* abbrev = sigabbrev_np(exit.signal);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(exit.signal);
}

std::optional<EventKind> event_kind_of(std::string_view name) {
  for (auto kind : k_event_kinds) {
    if (to_string(kind) == name)
      return kind;
  }
  return std::nullopt;
}

// The lease with the smallest token, else the earliest queue entry: the
// same choice as first_in_the_way() of sql/postgres/functions/10_util.sql,
// whatever order a store lists them in.
std::optional<InTheWay> in_the_way(const Attempt& blocked) {
  const auto& leases = blocked.blocking_leases;
  if (!leases.empty()) {
    const auto& lease = *std::min_element(leases.begin(), leases.end(),
                                          [](auto& a, auto& b) { return a.token < b.token; });
    return InTheWay{lease.owner, lease.info.host, lease.token};
  }
  const auto& waiters = blocked.blocking_waiters;
  if (!waiters.empty()) {
    const auto& waiter = *std::min_element(
        waiters.begin(), waiters.end(), [](auto& a, auto& b) { return a.position < b.position; });
    return InTheWay{waiter.owner, waiter.info.host, std::nullopt};
  }
  if (blocked.behind_transaction) {
    return InTheWay{lock::OwnerId::trusted(std::string(k_transaction_owner)),
                    "an open transaction of another session", std::nullopt};
  }
  return std::nullopt;
}

bool InTheWay::is_transaction() const {
  return owner.str() == k_transaction_owner;
}

}  // namespace clk::store
