// The Store on a SQL server, written once for PostgreSQL and MariaDB over a
// Session (session.hpp): each operation is one call of a routine of the
// lock model (sql/postgres/functions and sql/mariadb/procedures, the same
// names), its request bound as typed arguments, its reply read by
// json_replies.hpp, status_rows.hpp and expected_rows.hpp. Exclusion,
// queue order and the owner's proof are decided by the routines; this class
// turns requests into arguments, replies into results and errors, and
// decides how long each operation keeps trying through server trouble.
#pragma once

#include <memory>

#include "store/dead_holder.hpp"
#include "store/server/session.hpp"
#include "store/store.hpp"

namespace clk::store::server {

class ServerStore final : public Store, public DeadHolders {
 public:
  explicit ServerStore(std::unique_ptr<Session> session);
  ~ServerStore() override;
  ServerStore(const ServerStore&) = delete;
  ServerStore& operator=(const ServerStore&) = delete;

  // One attempt, by the deadline of set_acquire_deadline(); the request id
  // makes an attempt sent twice one grant. A blocked attempt made with
  // `queue` refreshes this owner's queue entries.
  Attempt try_acquire(const LockRequest& request, bool queue) override;
  void set_acquire_deadline(std::chrono::steady_clock::time_point deadline) override;
  void leave_queue(const LockRequest& request) override;
  void record_missed_run(const LockRequest& request, EventKind kind,
                         const std::optional<InTheWay>& in_the_way) override;
  void wait_for_change(std::chrono::steady_clock::time_point until) override;
  // Tried through server trouble for 3 s; clock run's heartbeat then retries
  // on its own schedule.
  void renew(const RenewRequest& request) override;
  void note_leftovers(const LeftoversNote& note) override;
  std::optional<HolderTrace> holder_trace(const std::string& ns, const lock::Resource& resource,
                                          const lock::OwnerId& owner, lock::Token token,
                                          const std::string& boot_id, std::int64_t pid_ns) override;
  bool end_dead_lease(const DeadHolderClaim& claim) override;
  // A read of status_rows per resource, asked only when the session's lease
  // watch heard of a loss or has none.
  bool still_holds(const RenewRequest& held) override;
  std::optional<milliseconds> still_holds_interval() const override;
  // A dropped connection is not simply sent again (a second release would
  // undo another re-entry): with request.tokens and depths the leases are
  // looked up (release_lookup.hpp) and the release sent again only if it
  // did not take effect, for up to 30 s; without them it throws
  // unavailable ("whether it took effect is unknown").
  std::vector<Released> release(const ReleaseRequest& request) override;
  void expect_runs(const Expectation& expectation) override;
  ExpectedRuns expected_runs(const ExpectedQuery& query) override;
  Snapshot status(const StatusQuery& query) override;
  std::vector<HistoryEvent> history(const HistoryQuery& query) override;
  GcReport gc(const GcOptions& options) override;
  MigrationReport migrate() override;
  std::optional<milliseconds> idle_limit() const override;
  void rest() override;
  std::vector<std::string> setup_warnings() override;
  std::vector<std::string> retired_routines() override;
  std::vector<std::string> missing_run_privileges() override;

 private:
  void patience(std::chrono::steady_clock::duration patience);
  Snapshot read_status(const StatusQuery& query);
  std::vector<HistoryEvent> read_history(const HistoryQuery& query);
  std::string call_release(const ReleaseRequest& request);
  ReleaseReply release_once(const ReleaseRequest& request);
  Attempt behind_transaction(const LockRequest& request, bool queue, const HierarchyBusy& busy);
  void record_skip(const LockRequest& request, const Attempt& blocked);

  std::unique_ptr<Session> m_session;
  bool m_release2_denied = false;  // this login may not execute release2
};

}  // namespace clk::store::server
