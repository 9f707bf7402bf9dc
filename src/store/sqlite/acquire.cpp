// The SQLite store's acquire: try_acquire(), the entry point, composes the
// decision (decide.cpp), the deadlock search (deadlock.cpp) and the queue
// (queue.cpp), then grants, re-enters or finds a --once-per period done.
#include <algorithm>

#include "error.hpp"
#include "store/sqlite/sqlite_store.hpp"
#include "util/process_facts.hpp"

namespace clk::store::sqlite {

using namespace std::chrono;

Attempt SqliteStore::try_acquire(const LockRequest& request, bool queue) {
  WriteTransaction tx(m_db);
  auto now = now_ms();
  // The owner's proof first: an id bound to another secret is granted
  // nothing, queued nowhere and keeps its queue entries.
  if (!proves_owner(request.owner, request.secret)) {
    record_refused(request.ns, request.resources, request.owner, request.mode, request.info,
                   describe(caller_of(request)), now);
    tx.commit();
    throw refusal_error(Operation::acquire, {Refusal::not_proven, request.resources.front()},
                        request.owner);
  }
  Attempt attempt;
  std::vector<lock::Decision> decisions;
  std::vector<std::optional<LeaseRow>> own_leases;
  std::vector<std::optional<WaiterRow>> own_entries;
  for (const auto& resource : request.resources) {
    auto [decision, own, mine] = decide(request, resource, now);
    // A refusal keeps what this attempt found expired (removed, recorded),
    // as PostgreSQL's try_acquire() does: only grants are all or none.
    if (decision.verdict == lock::Verdict::slots_mismatch) {
      tx.commit();
      throw refusal_error(Operation::acquire,
                          {Refusal::slots_mismatch, resource, request.slots, decision.other_slots},
                          request.owner);
    }
    if (decision.verdict == lock::Verdict::upgrade) {
      tx.commit();
      throw refusal_error(Operation::acquire, {Refusal::upgrade, resource}, request.owner);
    }
    for (auto& lease : decision.blocking_leases)
      attempt.blocking_leases.push_back(lease);
    for (auto& waiter : decision.blocking_waiters)
      attempt.blocking_waiters.push_back(waiter);
    decisions.push_back(std::move(decision));
    own_leases.push_back(std::move(own));
    own_entries.push_back(std::move(mine));
  }
  // Leaving the queue is a no-op for an owner this transaction found in it
  // nowhere: the uncontended acquire skips that statement.
  bool queued = std::any_of(own_entries.begin(), own_entries.end(),
                            [](const auto& entry) { return entry.has_value(); });
  if (!attempt.blocking_leases.empty() || !attempt.blocking_waiters.empty()) {
    auto cycle = may_close_cycle(request, now)
                     ? find_cycle(request, attempt.blocking_leases, attempt.blocking_waiters, now)
                     : std::nullopt;
    if (cycle) {
      if (queued)
        dequeue(request);
      attempt.outcome = Outcome::deadlock;
      attempt.cycle = *cycle;
    } else {
      attempt.outcome = Outcome::blocked;
      // What wait_for_change() compares with: read in the transaction that
      // found the request blocked (our own writes do not change it), and only
      // then, as only a blocked attempt waits.
      m_seen_version = m_db.data_version();
      if (queue)
        enqueue(request, now, own_entries);
      else if (request.record_refusal)
        record_missed(request, EventKind::skipped, in_the_way(attempt), now);
    }
    tx.commit();
    return attempt;
  }
  // --once-per, decided here, in the transaction that would grant: a run
  // that did the period commits its success before its lease goes, so a
  // request granted after it finds it. A retry of a grant that took effect
  // is not a new run.
  bool retry = std::any_of(own_leases.begin(), own_leases.end(), [&](const auto& own) {
    return own && own->request_id == request.request_id;
  });
  if (request.once_per && !retry) {
    if (auto done = period_done(request, now)) {
      if (queued)
        dequeue(request);
      record_missed(request, EventKind::skipped, std::nullopt, now, done);
      tx.commit();
      attempt.outcome = Outcome::done;
      attempt.done_by = std::move(done);
      return attempt;
    }
  }
  // Re-entering joins a lease: only its owner may, and the owner's proof
  // above covers every lease of this owner id.
  for (std::size_t i = 0; i < request.resources.size(); ++i) {
    bool reentry = decisions[i].verdict == lock::Verdict::reenter && own_leases[i];
    attempt.grants.push_back(reentry ? reenter(request, *own_leases[i], now)
                                     : grant(request, request.resources[i], now));
  }
  if (queued)
    dequeue(request);
  tx.commit();
  attempt.outcome = Outcome::granted;
  return attempt;
}

namespace {

// clock run's trace (dead_holder.hpp) at `first` and the four parameters
// after it, or NULLs (the statement is prepared once per connection and
// keeps its bindings).
void bind_holder(Statement& stmt, int first, const std::optional<HolderTrace>& trace) {
  if (!trace) {
    for (int i = first; i < first + 5; ++i)
      stmt.bind_null(i);
    return;
  }
  std::optional<std::string> cgroup;
  if (!trace->job_cgroup.empty())
    cgroup = trace->job_cgroup;
  stmt.bind(first, trace->boot_id)
      .bind(first + 1, trace->pid_ns)
      .bind(first + 2, trace->pid_start)
      .bind(first + 3, trace->job_group)
      .bind_text_or_null(first + 4, cgroup);
}

}  // namespace

Grant SqliteStore::grant(const LockRequest& request, const lock::Resource& resource,
                         std::int64_t now) {
  lock::Lease lease{request.ns,
                    resource,
                    request.owner,
                    request.info,
                    request.mode,
                    request.slots,
                    next_token(),
                    1,
                    sqlite::instant_of(now),
                    sqlite::instant_of(now),
                    std::nullopt,
                    {}};
  if (auto expires = expiry(request.ttl, now))
    lease.expires_at = sqlite::instant_of(*expires);
  // With clock run's trace (dead_holder.hpp), if any.
  auto stmt = m_db.prepare("INSERT INTO leases (" CLOCK_LEASE_COLUMNS
                           ", secret_hash, holder_boot_id, holder_pid_ns, holder_pid_start,"
                           " job_group, job_cgroup) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7, ?7, ?8,"
                           " ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?17, NULL, ?16, ?18, ?19, ?20, ?21,"
                           " ?22)");
  stmt.bind(1, request.ns)
      .bind(2, resource.str())
      .bind(3, request.owner.str())
      .bind(4, lock::to_string(request.mode))
      .bind(5, std::int64_t{request.slots})
      .bind(6, lease.token)
      .bind(7, now)
      .bind(8, expiry(request.ttl, now))
      .bind(9, request.info.host)
      .bind(10, request.info.ip)
      .bind(11, request.info.pid)
      .bind(12, request.info.user)
      .bind(13, request.info.command)
      .bind(14, sqlite::ms_of(request.info.started))
      .bind(15, request.request_id)
      .bind_text_or_null(16, secret_hash(request.secret))
      .bind(17, util::user_name());
  bind_holder(stmt, 18, request.holder);
  stmt.run();
  record(EventKind::acquired, lease, now, std::nullopt, "", secret_hash(request.secret));
  return {resource, lease.token, 1};
}

Grant SqliteStore::reenter(const LockRequest& request, const LeaseRow& held, std::int64_t now) {
  const auto& lease = held.lease;
  if (held.request_id == request.request_id) {
    return {lease.resource, lease.token, lease.depth};  // a retry of a grant that took effect
  }
  // The longer of the two leases wins; no expiry beats any expiry.
  auto stmt = m_db.prepare(
      "UPDATE leases SET depth = depth + 1, request_id = ?4, renewed_at = ?5,"
      "  expires_at = CASE WHEN expires_at IS NULL OR ?6 IS NULL THEN NULL"
      "                    ELSE max(expires_at, ?6) END"
      " WHERE namespace = ?1 AND resource = ?2 AND owner = ?3");
  stmt.bind(1, lease.ns)
      .bind(2, lease.resource.str())
      .bind(3, lease.owner.str())
      .bind(4, request.request_id)
      .bind(5, now)
      .bind(6, expiry(request.ttl, now))
      .run();
  return {lease.resource, lease.token, lease.depth + 1};
}

// Tokens come from one counter that gc never touches, drawn inside the write
// transaction: every later grant of any resource gets a larger one.
std::int64_t SqliteStore::next_token() {
  auto stmt =
      m_db.prepare("UPDATE counters SET value = value + 1 WHERE name = 'token' RETURNING value");
  if (!stmt.step())
    throw Error(ExitCode::internal, "the token counter row is missing");
  return stmt.integer(0);
}

// --once-per: the latest successful run of the first of the request's
// resources that had one started at or after now - D (at the boundary a
// run still counts), else none.
std::optional<PeriodRun> SqliteStore::period_done(const LockRequest& request, std::int64_t now) {
  auto stmt = m_db.prepare(
      "SELECT owner, host, token, started_at FROM last_success"
      " WHERE namespace = ?1 AND resource = ?2 AND started_at >= ?3");
  for (const auto& resource : request.resources) {
    stmt.bind(1, request.ns).bind(2, resource.str()).bind(3, now - request.once_per->count());
    if (stmt.step()) {
      return PeriodRun{resource, lock::OwnerId::trusted(stmt.text(0)), stmt.text(1),
                       stmt.integer(2), sqlite::instant_of(stmt.integer(3))};
    }
    stmt.reset();
  }
  return std::nullopt;
}

}  // namespace clk::store::sqlite
