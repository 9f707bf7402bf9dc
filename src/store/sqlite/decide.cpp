// The SQLite store's decision: can a request be granted now? The live
// leases and queue entries related to a resource (itself, its ancestors,
// its descendants) weighed by the lock model (lock::decide), expired leases
// removed and recorded on the way.
#include "error.hpp"
#include "store/sqlite/sqlite_store.hpp"

namespace clk::store::sqlite {

using namespace std::chrono;

// Whether any lease or queue entry, live or not, lies in the tree of the
// resource's top segment ("a" and every "a.…" for "a.b"): a superset of its
// ancestors and descendants, in one index range per table. When none does,
// an acquire has nothing to read or drop, and this statement, without the
// column lists, IN lists and ORDER BY of related_leases() and
// related_waiters(), costs a fifth of theirs to prepare (parsing is most of
// what a statement costs a short-lived clock). When some does, they run too.
bool SqliteStore::anything_related(const std::string& ns, const lock::Resource& resource) {
  std::string root = resource.str().substr(0, resource.str().find('.'));
  auto stmt = m_db.prepare(
      "SELECT EXISTS (SELECT 1 FROM leases WHERE namespace = ?1 AND resource >= ?2"
      "                 AND resource < ?3)"
      "    OR EXISTS (SELECT 1 FROM waiters WHERE namespace = ?1 AND resource >= ?2"
      "                 AND resource < ?3)");
  stmt.bind(1, ns).bind(2, root).bind(3, root + "/");
  stmt.step();
  return stmt.integer(0) != 0;
}

std::vector<LeaseRow> SqliteStore::related_leases(const std::string& ns,
                                                  const lock::Resource& resource) {
  // The resource and its ancestors by key equality, its descendants by a key
  // range: both are primary-key lookups however many unrelated leases exist.
  auto names = self_and_ancestors(resource);
  std::string sql = "SELECT " CLOCK_LEASE_COLUMNS
                    " FROM leases WHERE namespace = ?1"
                    "   AND resource IN (" +
                    parameters_from(5, names.size()) +
                    ")"
                    " UNION ALL "
                    "SELECT " CLOCK_LEASE_COLUMNS
                    " FROM leases WHERE namespace = ?1 AND resource > ?3 AND resource < ?4";
  auto stmt = m_db.prepare(sql.c_str());
  stmt.bind(1, ns).bind(3, resource.descendant_floor()).bind(4, resource.descendant_ceiling());
  for (std::size_t i = 0; i < names.size(); ++i)
    stmt.bind(5 + static_cast<int>(i), names[i]);
  std::vector<LeaseRow> rows;
  while (stmt.step())
    rows.push_back(sqlite::read_lease(stmt));
  return rows;
}

// The live queue entries on the resource, its ancestors and its
// descendants, in queue order, and, when `own` is given, that owner's entry
// on the resource itself even if it has lapsed: an acquire learns where it
// stands in the queue from the same statement.
std::vector<WaiterRow> SqliteStore::related_waiters(const std::string& ns,
                                                    const lock::Resource& resource,
                                                    std::int64_t now, const lock::OwnerId* own) {
  auto names = self_and_ancestors(resource);  // the resource itself last
  std::string self = "?" + std::to_string(5 + static_cast<int>(names.size()));
  std::string sql =
      "SELECT " CLOCK_WAITER_COLUMNS " FROM waiters WHERE namespace = ?1 AND resource IN (" +
      parameters_from(6, names.size()) +
      ") AND (expires_at > ?5 OR (owner = ?2 AND resource = " + self +
      "))"
      " UNION ALL "
      "SELECT " CLOCK_WAITER_COLUMNS
      " FROM waiters WHERE namespace = ?1 AND expires_at > ?5 AND resource > ?3 AND resource < ?4"
      " ORDER BY position";
  auto stmt = m_db.prepare(sql.c_str());
  stmt.bind(1, ns)
      .bind(3, resource.descendant_floor())
      .bind(4, resource.descendant_ceiling())
      .bind(5, now);
  if (own)
    stmt.bind(2, own->str());
  else
    stmt.bind_null(2);
  for (std::size_t i = 0; i < names.size(); ++i)
    stmt.bind(6 + static_cast<int>(i), names[i]);
  std::vector<WaiterRow> rows;
  while (stmt.step())
    rows.push_back(sqlite::read_waiter(stmt));
  return rows;
}

// An expired lease never blocks anyone: the first writer that meets one
// removes it and records the expiry, whether or not gc has run.
std::vector<lock::Lease> SqliteStore::live_leases_dropping_expired(std::vector<LeaseRow> rows,
                                                                   std::int64_t now) {
  std::vector<lock::Lease> live;
  for (auto& row : rows) {
    auto& lease = row.lease;
    if (lease.expires_at && sqlite::ms_of(*lease.expires_at) <= now) {
      remove_lease(lease);
      record(EventKind::expired, lease, sqlite::ms_of(*lease.expires_at),
             sqlite::ms_of(*lease.expires_at) - sqlite::ms_of(lease.acquired_at));
    } else {
      live.push_back(std::move(lease));
    }
  }
  return live;
}

// The verdict for one resource of a request, as lock::decide() gives it,
// from the live related leases and the live queue entries ahead of the
// owner's own (its entry, live or lapsed, and its live lease on the resource
// come back beside it). What has expired there is removed and recorded on
// the way (live_leases_dropping_expired()).
SqliteStore::Decided SqliteStore::decide(const LockRequest& request, const lock::Resource& resource,
                                         std::int64_t now) {
  // Uncontended: no lease or entry to read, nothing in the way.
  bool related = anything_related(request.ns, resource);
  auto rows = related ? related_leases(request.ns, resource) : std::vector<LeaseRow>{};
  std::optional<LeaseRow> own;
  for (const auto& row : rows) {
    if (row.lease.owner == request.owner && row.lease.resource == resource)
      own = row;
  }
  auto live = live_leases_dropping_expired(std::move(rows), now);
  if (own && own->lease.expires_at && sqlite::ms_of(*own->lease.expires_at) <= now)
    own.reset();
  auto waiters = related ? related_waiters(request.ns, resource, now, &request.owner)
                         : std::vector<WaiterRow>{};
  std::optional<WaiterRow> mine;
  for (const auto& row : waiters) {
    if (row.waiter.owner == request.owner && row.waiter.resource == resource)
      mine = row;
  }
  // Ahead of us: every live entry before ours (ours, live or lapsed, is
  // the only lapsed one found), or every live entry when we have none.
  std::vector<lock::Waiter> earlier;
  for (auto& row : waiters) {
    if (!mine || row.waiter.position < mine->waiter.position)
      earlier.push_back(row.waiter);
  }
  lock::Claim claim{request.ns, resource, request.owner, request.mode, request.slots};
  auto decision = lock::decide(claim, live, earlier);
  return {std::move(decision), std::move(own), std::move(mine)};
}

}  // namespace clk::store::sqlite
