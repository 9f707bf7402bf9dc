// The SQLite store's queue: a request that cannot be granted waits in a
// first-come, first-served queue per resource. Its entry lives
// store::waiter_lifetime(ttl) (src/store/store.cpp, the rule written once
// for this backend), is refreshed once half of that is gone, and leaves with
// the grant, a deadlock, a done --once-per period or the waiter giving up.
#include "error.hpp"
#include "store/sqlite/sqlite_store.hpp"
#include "util/process_facts.hpp"

namespace clk::store::sqlite {

using namespace std::chrono;

// `own_entries`: the owner's entry on each resource of the request, as this
// transaction found it (related_waiters()).
void SqliteStore::enqueue(const LockRequest& request, std::int64_t now,
                          const std::vector<std::optional<WaiterRow>>& own_entries) {
  auto lifetime = waiter_lifetime(request.ttl).count();
  for (std::size_t i = 0; i < request.resources.size(); ++i) {
    const auto& resource = request.resources[i];
    const auto& existing = own_entries[i];
    // Refresh only when half the lifetime is gone: a write wakes every other
    // waiter (data_version), so rewriting on each poll would spin them all.
    if (existing && existing->expires_at_ms - now > lifetime / 2)
      continue;
    // A lapsed entry is dead: asking again is a new arrival, at the back of
    // the queue, as on PostgreSQL (one lock model, man clock, GUARANTEES).
    if (existing && existing->expires_at_ms <= now)
      drop_waiter(request.ns, resource, request.owner);
    auto stmt = m_db.prepare(
        "INSERT INTO waiters (namespace, resource, owner, mode, slots, request_id, enqueued_at,"
        " expires_at, host, ip, pid, user, command, owner_started_at, secret_hash, db_user)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"
        " ON CONFLICT (namespace, resource, owner) DO UPDATE SET expires_at = excluded.expires_at,"
        "   request_id = excluded.request_id, mode = excluded.mode, slots = excluded.slots");
    stmt.bind(1, request.ns)
        .bind(2, resource.str())
        .bind(3, request.owner.str())
        .bind(4, lock::to_string(request.mode))
        .bind(5, std::int64_t{request.slots})
        .bind(6, request.request_id)
        .bind(7, now)
        .bind(8, now + lifetime)
        .bind(9, request.info.host)
        .bind(10, request.info.ip)
        .bind(11, request.info.pid)
        .bind(12, request.info.user)
        .bind(13, request.info.command)
        .bind(14, sqlite::ms_of(request.info.started))
        .bind_text_or_null(15, secret_hash(request.secret))
        .bind(16, util::user_name());
    stmt.run();
  }
}

void SqliteStore::drop_waiter(const std::string& ns, const lock::Resource& resource,
                              const lock::OwnerId& owner) {
  auto stmt =
      m_db.prepare("DELETE FROM waiters WHERE namespace = ?1 AND resource = ?2 AND owner = ?3");
  stmt.bind(1, ns).bind(2, resource.str()).bind(3, owner.str()).run();
}

void SqliteStore::dequeue(const LockRequest& request) {
  auto stmt =
      m_db.prepare("DELETE FROM waiters WHERE namespace = ?1 AND resource = ?2 AND owner = ?3");
  for (const auto& resource : request.resources) {
    stmt.bind(1, request.ns).bind(2, resource.str()).bind(3, request.owner.str()).run();
    stmt.reset();
  }
}

// Without the owner's proof, the entries stay and the attempt is recorded.
void SqliteStore::leave_queue(const LockRequest& request) {
  WriteTransaction tx(m_db);
  if (proves_owner(request.owner, request.secret))
    dequeue(request);
  else
    record_refused(request.ns, request.resources, request.owner, std::nullopt, {}, "", now_ms());
  tx.commit();
}

}  // namespace clk::store::sqlite
