// The Store on PostgreSQL: many hosts, one lock table. A thin client of the
// SQL functions of sql/postgres: every operation is one function call, so one
// round trip and one transaction, with all lease arithmetic on the server.
#pragma once

#include <memory>
#include <string>

#include "store/dead_holder.hpp"
#include "store/postgres/lease_watch.hpp"
#include "store/server/json_replies.hpp"
#include "store/store.hpp"
#include "store/store_options.hpp"

namespace clk::store {

// Connects with options.url: a postgresql:// URL or a libpq keyword string;
// libpq's environment (PGHOST, PGPASSWORD…) and files (.pgpass, service
// files) apply. Adds connect_timeout (options.connect_timeout) and TCP
// keepalives unless the URL or the environment sets them. Throws
// clk::Error: config (78) for an invalid pg_schema or a connection refused
// for its credentials or database name, unavailable (69) for a server that
// cannot be reached (the message names host and port, never the password).
// The schema is created or migrated on first use where the role may.
std::unique_ptr<Store> make_postgres_store(const StoreOptions& options);

// The DDL of every PostgreSQL migration and the current functions for schema
// `pg_schema`, as the one
// idempotent script that `clock init` runs, for `clock init --print-sql`.
// Throws clk::Error(config) for an invalid schema name.
std::string postgres_schema_sql(const std::string& pg_schema);

class PostgresStore final : public Store, public DeadHolders {
 public:
  explicit PostgresStore(const StoreOptions& options);
  ~PostgresStore() override;
  PostgresStore(const PostgresStore&) = delete;
  PostgresStore& operator=(const PostgresStore&) = delete;

  // A blocked attempt made with `queue` refreshes this owner's queue entries.
  Attempt try_acquire(const LockRequest& request, bool queue) override;
  void leave_queue(const LockRequest& request) override;
  void record_missed_run(const LockRequest& request, EventKind kind,
                         const std::optional<InTheWay>& in_the_way) override;
  // The first three waiters of a queue LISTEN on the schema's channel, the
  // first eight while the queue moves (through pgbouncer, where
  // notifications do not arrive, the first polls every 50 ms); the others
  // close their connection and look again when the queue's speed says they
  // are due among them (store.cpp, Impl::pace()).
  void wait_for_change(std::chrono::steady_clock::time_point until) override;
  // Idempotent: after a dropped connection or other server trouble it is
  // retried on a fresh one for up to 3 s (a retry settles an outcome the
  // first attempt left unknown); clock run's heartbeat then retries on its
  // own schedule.
  void renew(const RenewRequest& request) override;
  void note_leftovers(const LeftoversNote& note) override;
  void note_holder(const RenewRequest& held, const HolderTrace& trace) override;
  std::optional<HolderTrace> holder_trace(const std::string& ns, const lock::Resource& resource,
                                          const lock::OwnerId& owner, lock::Token token,
                                          const std::string& boot_id, std::int64_t pid_ns) override;
  bool end_dead_lease(const DeadHolderClaim& claim) override;
  // A read of the status function per resource: a round trip each, so it is
  // asked only when the lease watch (options.watch_lease) heard of a loss or
  // cannot tell; without the watch still_holds_interval() is none and a loss
  // is found by the next renewal.
  bool still_holds(const RenewRequest& held) override;
  std::optional<std::chrono::milliseconds> still_holds_interval() const override;
  // A dropped connection is not simply retried (a second try would undo
  // another re-entry): with request.tokens and depths the lease is looked up
  // and the release sent again only if it did not take effect, for up to
  // 30 s; without them it throws unavailable ("whether it took effect is
  // unknown").
  std::vector<Released> release(const ReleaseRequest& request) override;
  // Missed runs (sql/postgres/functions/60_expected_runs.sql): expect_runs()
  // tries for 1 s (clock run calls it while its command runs), expected_runs()
  // as long as status.
  void expect_runs(const Expectation& expectation) override;
  ExpectedRuns expected_runs(const ExpectedQuery& query) override;
  Snapshot status(const StatusQuery& query) override;
  std::vector<HistoryEvent> history(const HistoryQuery& query) override;
  GcReport gc(const GcOptions& options) override;
  MigrationReport migrate() override;
  // One second: the cost of a reconnect (docs/performance.md) stays off a
  // short job's path (acquire and release share one connection).
  std::optional<milliseconds> idle_limit() const override;
  void rest() override;
  // The server streams to asynchronous standbys only (replication.hpp).
  std::vector<std::string> setup_warnings() override;
  std::vector<std::string> retired_routines() override;
  // EXECUTE on the functions clock run calls (privileges.hpp).
  std::vector<std::string> missing_run_privileges() override;
  void set_acquire_deadline(std::chrono::steady_clock::time_point deadline) override;

 private:
  Snapshot status_within(const StatusQuery& query);
  std::vector<HistoryEvent> history_within(const HistoryQuery& query);
  ReleaseReply release_once(const ReleaseRequest& request);
  void record_skip(const LockRequest& request, const Attempt& blocked);

  class Impl;
  std::unique_ptr<Impl> m_impl;
  std::unique_ptr<postgres::LeaseWatch> m_watch;  // with options.watch_lease
};

}  // namespace clk::store
