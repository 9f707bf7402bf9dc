// The SQLite store's part of the dead-holder rule (store/dead_holder.hpp):
// a holder's trace (recorded with its grant, acquire.cpp), and the end of
// a lease whose holder died.
#include "error.hpp"
#include "store/sqlite/sqlite_store.hpp"

namespace clk::store::sqlite {

std::optional<HolderTrace> SqliteStore::holder_trace(const std::string& ns,
                                                     const lock::Resource& resource,
                                                     const lock::OwnerId& owner, lock::Token token,
                                                     const std::string& boot_id,
                                                     std::int64_t pid_ns) {
  ReadTransaction tx(m_db);
  auto find = m_db.prepare(
      "SELECT holder_boot_id, holder_pid_ns, pid, holder_pid_start, job_group, job_cgroup"
      " FROM leases WHERE namespace = ?1 AND resource = ?2 AND owner = ?3 AND token = ?4"
      "   AND holder_boot_id = ?5 AND holder_pid_ns = ?6");
  find.bind(1, ns)
      .bind(2, resource.str())
      .bind(3, owner.str())
      .bind(4, token)
      .bind(5, boot_id)
      .bind(6, pid_ns);
  if (!find.step())
    return std::nullopt;
  return HolderTrace{find.text(0),
                     find.integer(1),
                     find.integer(2),
                     find.integer(3),
                     find.optional_integer(4).value_or(0),
                     find.is_null(5) ? std::string() : find.text(5)};
}

// The lease is ended only as the claimer judged it: the same token, and the
// same boot, pid namespace, pid and start time (a newer lease of the same
// owner, or a trace rewritten since, is left alone).
bool SqliteStore::end_dead_lease(const DeadHolderClaim& claim) {
  WriteTransaction tx(m_db);
  auto now = now_ms();
  auto find = m_db.prepare("SELECT " CLOCK_LEASE_COLUMNS
                           " FROM leases WHERE namespace = ?1 AND resource = ?2 AND owner = ?3"
                           "   AND token = ?4 AND holder_boot_id = ?5 AND holder_pid_ns = ?6"
                           "   AND pid = ?7 AND holder_pid_start = ?8");
  find.bind(1, claim.ns)
      .bind(2, claim.resource.str())
      .bind(3, claim.owner.str())
      .bind(4, claim.token)
      .bind(5, claim.trace.boot_id)
      .bind(6, claim.trace.pid_ns)
      .bind(7, claim.trace.pid)
      .bind(8, claim.trace.pid_start);
  if (!find.step())
    return false;
  auto lease = sqlite::read_lease(find).lease;
  find.reset();
  remove_lease(lease);
  record(EventKind::expired, lease, now, now - sqlite::ms_of(lease.acquired_at),
         holder_died_by(claim.caller));
  tx.commit();
  return true;
}

}  // namespace clk::store::sqlite
