// The SQLite Store's class, shared by the files that implement it, one job
// each: store.cpp (opening, migrations, waiting, status, history, gc),
// acquire.cpp (try_acquire, the entry point that composes decide.cpp,
// queue.cpp and deadlock.cpp), decide.cpp (can a request be granted now:
// conflicts, slots, hierarchy), queue.cpp (the FIFO queue entry, its
// lifetime and its leaving), deadlock.cpp (the deadlock search),
// renew_release.cpp, records.cpp (history records) and owner_proof.cpp (the
// owner's secret). Only these files include it: the rest of clock knows the
// store by make_sqlite_store() (store/sqlite/store.hpp).
//
// Every operation is one IMMEDIATE transaction: SQLite's write lock
// serializes writers across processes, so "check for conflicts, then
// insert" cannot race. The clock is read once per transaction, inside it:
// the host's real-time clock, one clock for every process on the host.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lock/conflict.hpp"
#include "store/dead_holder.hpp"
#include "store/sqlite/db.hpp"
#include "store/sqlite/expected_runs.hpp"
#include "store/sqlite/rows.hpp"
#include "store/store.hpp"

namespace clk::store::sqlite {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// How long a statement waits for another process's write lock.
inline constexpr milliseconds k_busy_timeout{30'000};

// The resource and its ancestors, for `resource IN (…)`.
std::vector<std::string> self_and_ancestors(const lock::Resource& resource);

// "?F, ?F+1, …": one parameter per name, from ?F on. A bound list parses in a
// fraction of what a json_each() subquery over one JSON parameter did, and
// the statement for each depth is prepared once per connection.
std::string parameters_from(int first, std::size_t count);

// The hash a lease keeps of its owner's secret; NULL (no proof needed) for
// an empty secret.
std::optional<std::string> secret_hash(const std::string& secret);

// An acquirer as the caller of a refused re-entry.
Caller caller_of(const LockRequest& request);

// The statements of a holder's release, named so that use_idle_time() can
// prepare them ahead: the statement cache knows a statement by the address
// of its text.
inline constexpr const char* k_find_leases_to_release =
    "SELECT " CLOCK_LEASE_COLUMNS
    ", secret_hash IS NULL OR secret_hash = ?4"
    " FROM leases WHERE namespace = ?1 AND resource = ?2"
    " AND (?3 IS NULL OR owner = ?3)";
inline constexpr const char* k_remove_lease =
    "DELETE FROM leases WHERE namespace = ?1 AND resource = ?2 AND owner = ?3";
inline constexpr const char* k_record_success =
    "INSERT INTO last_success (namespace, resource, started_at, owner, host, token)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
    " ON CONFLICT (namespace, resource) DO UPDATE SET started_at = excluded.started_at,"
    "   owner = excluded.owner, host = excluded.host, token = excluded.token"
    " WHERE excluded.started_at >= last_success.started_at";

// A run's result in its resource's run results (count_run_result).
inline constexpr const char* k_count_run_result =
    "INSERT INTO run_results (namespace, resource, succeeded, failed, last_ended_at,"
    "   last_exit_code, last_exit_signal, last_held_ms)"
    " VALUES (?1, ?2, ?3, 1 - ?3, ?4, ?5, ?6, ?7)"
    " ON CONFLICT (namespace, resource) DO UPDATE SET"
    "   succeeded = succeeded + excluded.succeeded, failed = failed + excluded.failed,"
    "   last_ended_at = excluded.last_ended_at, last_exit_code = excluded.last_exit_code,"
    "   last_exit_signal = excluded.last_exit_signal, last_held_ms = excluded.last_held_ms";

class SqliteStore final : public Store, public DeadHolders {
 public:
  explicit SqliteStore(std::string path) : m_db(std::move(path), k_busy_timeout) { migrate(); }

  Attempt try_acquire(const LockRequest& request, bool queue) override;
  void leave_queue(const LockRequest& request) override;
  void record_missed_run(const LockRequest& request, EventKind kind,
                         const std::optional<InTheWay>& in_the_way) override;
  void wait_for_change(steady_clock::time_point until) override;
  void renew(const RenewRequest& request) override;
  bool still_holds(const RenewRequest& held) override;
  void note_leftovers(const LeftoversNote& note) override;
  // A dead holder's lease: store/sqlite/dead_holder.cpp.
  std::optional<HolderTrace> holder_trace(const std::string& ns, const lock::Resource& resource,
                                          const lock::OwnerId& owner, lock::Token token,
                                          const std::string& boot_id, std::int64_t pid_ns) override;
  bool end_dead_lease(const DeadHolderClaim& claim) override;
  std::optional<milliseconds> still_holds_interval() const override { return milliseconds(200); }
  std::vector<Released> release(const ReleaseRequest& request) override;
  // Missed runs: store/sqlite/expected_runs.cpp.
  void expect_runs(const Expectation& expectation) override {
    sqlite::expect_runs(m_db, expectation, now_ms());
  }
  ExpectedRuns expected_runs(const ExpectedQuery& query) override {
    return sqlite::expected_runs(m_db, query, now_ms());
  }
  Snapshot status(const StatusQuery& query) override;
  std::vector<HistoryEvent> history(const HistoryQuery& query) override;
  GcReport gc(const GcOptions& options) override;
  MigrationReport migrate() override;
  // While clock run's command runs: the release's statements prepared, so
  // that their parse is off the path once the command ends, and the WAL
  // checkpointed when due.
  void use_idle_time() noexcept override {
    try {
      for (const char* sql :
           {k_find_leases_to_release, k_remove_lease, k_record_success, k_count_run_result})
        m_db.prepare(sql);
    } catch (const std::exception&) {
      // The release prepares them itself, and reports what fails then.
    }
    m_db.checkpoint_when_idle();
  }
  // Between calls the connection keeps no lock, only its page cache (up to
  // 2 MiB): its unused pages go back to the heap, for a caller that keeps the
  // store open between reads (clock serve) or between renewals.
  void rest() override { m_db.release_memory(); }
  bool may_exit_without_closing() const override { return true; }
  // One file on one host: nothing to warn about.
  std::vector<std::string> setup_warnings() override { return {}; }

 private:
  // One resource's verdict, with the owner's own lease and queue entry there.
  struct Decided {
    lock::Decision decision;
    std::optional<LeaseRow> own;
    std::optional<WaiterRow> mine;
  };

  std::int64_t now_ms();
  // decide.cpp: can a request be granted now?
  Decided decide(const LockRequest& request, const lock::Resource& resource, std::int64_t now);
  bool anything_related(const std::string& ns, const lock::Resource& resource);
  std::vector<LeaseRow> related_leases(const std::string& ns, const lock::Resource& resource);
  std::vector<WaiterRow> related_waiters(const std::string& ns, const lock::Resource& resource,
                                         std::int64_t now, const lock::OwnerId* own = nullptr);
  std::vector<lock::Lease> live_leases_dropping_expired(std::vector<LeaseRow> rows,
                                                        std::int64_t now);
  void record(EventKind kind, const lock::Lease& lease, std::int64_t at,
              std::optional<std::int64_t> held_ms, const std::string& by = "",
              const std::optional<std::string>& acquired_hash = std::nullopt,
              const RunExit* exit = nullptr);
  void record_refused(const std::string& ns, const std::vector<lock::Resource>& resources,
                      const lock::OwnerId& owner, const std::optional<lock::Mode>& mode,
                      const lock::OwnerInfo& claimed, const std::string& by, std::int64_t at);
  void record_missed(const LockRequest& request, EventKind kind,
                     const std::optional<InTheWay>& in_the_way, std::int64_t at,
                     const std::optional<PeriodRun>& done_by = std::nullopt);
  std::optional<PeriodRun> period_done(const LockRequest& request, std::int64_t now);
  void record_success(const lock::Lease& lease);
  void count_run_result(const lock::Lease& lease, std::int64_t at, std::int64_t held_ms,
                        const RunExit& exit);
  void record_lost_gone(const std::string& ns, const lock::Resource& resource,
                        const lock::OwnerId& owner, std::optional<lock::Token> token,
                        std::int64_t at);
  void remove_lease(const lock::Lease& lease);
  void check_still_held(const RenewRequest& held, std::int64_t now, WriteTransaction& tx);
  bool proves_owner(const lock::OwnerId& owner, const std::string& secret);
  bool held_once_by(const std::string& ns, const lock::Resource& resource,
                    const lock::OwnerId& owner, const std::string& secret);
  std::int64_t next_token();
  // queue.cpp: the owner's FIFO queue entries.
  void enqueue(const LockRequest& request, std::int64_t now,
               const std::vector<std::optional<WaiterRow>>& own_entries);
  void dequeue(const LockRequest& request);
  void drop_waiter(const std::string& ns, const lock::Resource& resource,
                   const lock::OwnerId& owner);
  Grant grant(const LockRequest& request, const lock::Resource& resource, std::int64_t now);
  Grant reenter(const LockRequest& request, const LeaseRow& held, std::int64_t now);
  // deadlock.cpp: the deadlock search.
  bool may_close_cycle(const LockRequest& request, std::int64_t now);
  std::optional<Cycle> find_cycle(const LockRequest& request,
                                  const std::vector<lock::Lease>& blocking_leases,
                                  const std::vector<lock::Waiter>& blocking_waiters,
                                  std::int64_t now);
  bool held_by_others(const std::string& ns, const lock::Resource& resource, std::int64_t now);
  std::optional<std::int64_t> expiry(milliseconds ttl, std::int64_t now) const {
    return ttl.count() == 0 ? std::nullopt : std::optional(now + ttl.count());
  }

  Database m_db;
  MigrationReport m_migrated;        // what this process's migrate() calls changed
  std::int64_t m_seen_version = -1;  // data_version when an acquire was last blocked
  // still_holds(): the data_version at which `m_held_owner` last held its leases.
  std::int64_t m_held_version = -1;
  std::string m_held_owner;
};

}  // namespace clk::store::sqlite
