// The SQLite store's owner proof: whether a caller's secret proves the
// owner id it acts for (man clock, Owners and re-entry).
#include "store/sqlite/sqlite_store.hpp"
#include "util/sha256.hpp"

namespace clk::store::sqlite {

using namespace std::chrono;

// Whether `secret` proves that its caller is the owner id `owner`: no row of
// the owner's, lease or queue entry (live, or expired and not yet
// collected), keeps another hash. The proof belongs to the id, not to one
// row: once an id holds or waits for anything, every act in its name needs
// the secret. An id with no such row is free (a new owner, or rows from
// before secrets), as before; as owner_refuses() on PostgreSQL.
bool SqliteStore::proves_owner(const lock::OwnerId& owner, const std::string& secret) {
  auto stmt = m_db.prepare(
      "SELECT NOT EXISTS (SELECT 1 FROM leases WHERE owner = ?1 AND secret_hash IS NOT NULL"
      "                     AND secret_hash IS NOT ?2)"
      "   AND NOT EXISTS (SELECT 1 FROM waiters WHERE owner = ?1 AND secret_hash IS NOT NULL"
      "                     AND secret_hash IS NOT ?2)");
  stmt.bind(1, owner.str()).bind_text_or_null(2, secret_hash(secret));
  return stmt.step() && stmt.integer(0) != 0;
}

// Whether history shows `owner`, proven by `secret`, acquiring the resource:
// what a renewal that finds its lease gone needs before it records 'lost' in
// that owner's name (a record from before secrets keeps no hash).
bool SqliteStore::held_once_by(const std::string& ns, const lock::Resource& resource,
                               const lock::OwnerId& owner, const std::string& secret) {
  auto stmt = m_db.prepare(
      "SELECT EXISTS (SELECT 1 FROM history WHERE namespace = ?1 AND resource = ?2"
      "                 AND owner = ?3 AND event = 'acquired'"
      "                 AND (secret_hash IS NULL OR secret_hash IS ?4))");
  stmt.bind(1, ns).bind(2, resource.str()).bind(3, owner.str());
  stmt.bind_text_or_null(4, secret_hash(secret));
  return stmt.step() && stmt.integer(0) != 0;
}

}  // namespace clk::store::sqlite
