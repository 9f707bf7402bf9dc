// The SQLite store's history records: grants, releases, expiries, refusals,
// runs that did not happen and the latest successful run of a resource.
#include "error.hpp"
#include "store/leftovers_json.hpp"
#include "store/sqlite/sqlite_store.hpp"
#include "util/process_facts.hpp"

namespace clk::store::sqlite {

using namespace std::chrono;

// `acquired_hash`: an 'acquired' record keeps its lease's secret hash, so that
// a renewal that finds the lease gone records 'lost' only for the owner
// that held it (held_once_by()). `exit`: on a release by clock run, how its
// command ended.
void SqliteStore::record(EventKind kind, const lock::Lease& lease, std::int64_t at,
                         std::optional<std::int64_t> held_ms, const std::string& by,
                         const std::optional<std::string>& acquired_hash, const RunExit* exit) {
  auto stmt = m_db.prepare(
      "INSERT INTO history (at, event, namespace, resource, owner, mode, token, held_ms, host, ip,"
      " pid, user, command, by, secret_hash, db_user, leftovers, exit_code, exit_signal)"
      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,"
      " ?19)");
  // The end of a lease names what its holder reported its command left.
  std::optional<std::string> leftovers;
  bool ends_lease = kind == EventKind::released || kind == EventKind::forced ||
                    kind == EventKind::expired || kind == EventKind::lost;
  if (ends_lease && !lease.leftovers.empty())
    leftovers = encode_leftovers(lease.leftovers);
  stmt.bind(1, at)
      .bind(2, to_string(kind))
      .bind(3, lease.ns)
      .bind(4, lease.resource.str())
      .bind(5, lease.owner.str())
      .bind(6, lock::to_string(lease.mode))
      .bind(7, lease.token)
      .bind(8, held_ms)
      .bind(9, lease.info.host)
      .bind(10, lease.info.ip)
      .bind(11, lease.info.pid)
      .bind(12, lease.info.user)
      .bind(13, lease.info.command)
      .bind(14, by)
      .bind_text_or_null(15, acquired_hash)
      .bind(16, util::user_name())
      .bind_text_or_null(17, leftovers)
      .bind(18, exit ? exit->code : std::nullopt)
      .bind(19, exit ? exit->signal_if_killed() : std::nullopt);
  stmt.run();
}

// An act refused for want of the owner's secret (proves_owner()): one
// 'refused' record per resource, with the owner's lease there if it has one
// (its facts and token), else the facts the caller claims, and in `by`, who
// asked; as record_refused() in sql/postgres/functions/10_util.sql.
void SqliteStore::record_refused(const std::string& ns,
                                 const std::vector<lock::Resource>& resources,
                                 const lock::OwnerId& owner, const std::optional<lock::Mode>& mode,
                                 const lock::OwnerInfo& claimed, const std::string& by,
                                 std::int64_t at) {
  auto stmt = m_db.prepare(
      "INSERT INTO history (at, event, namespace, resource, owner, mode, token, host, ip, pid,"
      " user, command, by, db_user)"
      " SELECT ?1, 'refused', ?2, ?3, ?4, coalesce(l.mode, ?5), l.token, coalesce(l.host, ?6),"
      "   coalesce(l.ip, ?7), coalesce(l.pid, ?8), coalesce(l.user, ?9), coalesce(l.command, ?10),"
      "   ?11, ?12"
      " FROM (SELECT 1) LEFT JOIN leases l"
      "   ON l.namespace = ?2 AND l.resource = ?3 AND l.owner = ?4");
  for (const auto& resource : resources) {
    stmt.bind(1, at).bind(2, ns).bind(3, resource.str()).bind(4, owner.str());
    if (mode)
      stmt.bind(5, lock::to_string(*mode));
    else
      stmt.bind_null(5);
    stmt.bind(6, claimed.host)
        .bind(7, claimed.ip)
        .bind(8, claimed.pid)
        .bind(9, claimed.user)
        .bind(10, claimed.command)
        .bind(11, by)
        .bind(12, util::user_name());
    stmt.run();
    stmt.reset();
  }
}

// A run that did not happen: one record per resource of its request, with
// the requester's facts and who was in the way, or (--once-per) the run that
// did the period, with its start; no token (none was drawn).
void SqliteStore::record_missed(const LockRequest& request, EventKind kind,
                                const std::optional<InTheWay>& in_the_way, std::int64_t at,
                                const std::optional<PeriodRun>& done_by) {
  auto stmt = m_db.prepare(
      "INSERT INTO history (at, event, namespace, resource, owner, mode, host, ip, pid, user,"
      " command, in_the_way_owner, in_the_way_host, in_the_way_token, done_by_started_at,"
      " db_user) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)");
  for (const auto& resource : request.resources) {
    stmt.bind(1, at)
        .bind(2, to_string(kind))
        .bind(3, request.ns)
        .bind(4, resource.str())
        .bind(5, request.owner.str())
        .bind(6, lock::to_string(request.mode))
        .bind(7, request.info.host)
        .bind(8, request.info.ip)
        .bind(9, request.info.pid)
        .bind(10, request.info.user)
        .bind(11, request.info.command)
        .bind(16, util::user_name());
    if (done_by) {
      stmt.bind(12, done_by->owner.str())
          .bind(13, done_by->host)
          .bind(14, done_by->token)
          .bind(15, sqlite::ms_of(done_by->started));
    } else if (in_the_way) {
      stmt.bind(12, in_the_way->owner.str()).bind(13, in_the_way->host).bind(14, in_the_way->token);
      stmt.bind_null(15);
    } else {
      stmt.bind_null(12).bind_null(13).bind_null(14).bind_null(15);
    }
    stmt.run();
    stmt.reset();
  }
}

// Without the owner's proof, the run is not recorded in its name: the
// attempt is recorded as refused instead.
void SqliteStore::record_missed_run(const LockRequest& request, EventKind kind,
                                    const std::optional<InTheWay>& in_the_way) {
  WriteTransaction tx(m_db);
  if (proves_owner(request.owner, request.secret))
    record_missed(request, kind, in_the_way, now_ms());
  else
    record_refused(request.ns, request.resources, request.owner, request.mode, request.info, "",
                   now_ms());
  tx.commit();
}

// The lease of a run whose command exited 0 ends: it is its resource's
// latest success, unless one granted later already ended (shared locks and
// semaphores run side by side).
void SqliteStore::record_success(const lock::Lease& lease) {
  auto stmt = m_db.prepare(k_record_success);
  stmt.bind(1, lease.ns)
      .bind(2, lease.resource.str())
      .bind(3, sqlite::ms_of(lease.acquired_at))
      .bind(4, lease.owner.str())
      .bind(5, lease.info.host)
      .bind(6, lease.token)
      .run();
}

// A run of clock run that ended (its `released` record carries the same
// exit), in its resource's run results.
void SqliteStore::count_run_result(const lock::Lease& lease, std::int64_t at, std::int64_t held_ms,
                                   const RunExit& exit) {
  m_db.prepare(k_count_run_result)
      .bind(1, lease.ns)
      .bind(2, lease.resource.str())
      .bind(3, std::int64_t{exit.succeeded() ? 1 : 0})
      .bind(4, at)
      .bind(5, exit.code)
      .bind(6, exit.signal_if_killed())
      .bind(7, held_ms)
      .run();
}

// A lease already gone when its owner renews: only the owner, the resource
// and the token it held (if it said) are known; mode and token may be NULL.
void SqliteStore::record_lost_gone(const std::string& ns, const lock::Resource& resource,
                                   const lock::OwnerId& owner, std::optional<lock::Token> token,
                                   std::int64_t at) {
  auto stmt = m_db.prepare(
      "INSERT INTO history (at, event, namespace, resource, owner, token, db_user)"
      " VALUES (?1, 'lost', ?2, ?3, ?4, ?5, ?6)");
  stmt.bind(1, at).bind(2, ns).bind(3, resource.str()).bind(4, owner.str()).bind(5, token);
  stmt.bind(6, util::user_name());
  stmt.run();
}

}  // namespace clk::store::sqlite
