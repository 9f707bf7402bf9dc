// Reading lease, waiter and history rows of the SQLite schema into the lock
// model, and the column lists the queries select, in the same order.
#pragma once

#include <string>

#include "lock/lease.hpp"
#include "store/sqlite/db.hpp"
#include "store/store.hpp"

// Column lists as macros so that every query stays one constant string.
#define CLOCK_LEASE_COLUMNS                                                          \
  "namespace, resource, owner, mode, slots, token, depth, acquired_at, renewed_at, " \
  "expires_at, host, ip, pid, user, command, owner_started_at, request_id, db_user, leftovers"
#define CLOCK_WAITER_COLUMNS                                                              \
  "namespace, resource, owner, mode, slots, position, enqueued_at, host, ip, pid, user, " \
  "command, owner_started_at, request_id, expires_at, db_user"
#define CLOCK_HISTORY_COLUMNS                                                              \
  "id, at, event, namespace, resource, owner, mode, token, held_ms, host, ip, pid, user, " \
  "command, by, in_the_way_owner, in_the_way_host, in_the_way_token, done_by_started_at, " \
  "db_user, leftovers, exit_code, exit_signal"
// A row of period_changes (migration 013) in the columns of a history row
// followed by every_ms and previous_every_ms: read_history reads both.
#define CLOCK_PERIOD_CHANGE_COLUMNS                                                       \
  "id, at, 'period_changed', namespace, resource, owner, mode, token, NULL, host, ip, "   \
  "pid, user, command, by, NULL, NULL, NULL, NULL, db_user, NULL, NULL, NULL, every_ms, " \
  "previous_every_ms"

namespace clk::store::sqlite {

struct LeaseRow {
  lock::Lease lease;
  std::string request_id;
};

struct WaiterRow {
  lock::Waiter waiter;
  std::string request_id;
  std::int64_t expires_at_ms = 0;
};

lock::Instant instant_of(std::int64_t ms);
std::int64_t ms_of(lock::Instant instant);

LeaseRow read_lease(const Statement& row);
WaiterRow read_waiter(const Statement& row);
HistoryEvent read_history(const Statement& row);
// namespace, resource, outcome, count: a row of run_counts.
RunCount read_run_count(const Statement& row);
RunResults read_run_results(const Statement& row);

}  // namespace clk::store::sqlite
