// The SQLite store's renewals and releases, and a holder's check that it
// still holds its leases.
#include <algorithm>

#include "error.hpp"
#include "store/leftovers_json.hpp"
#include "store/sqlite/sqlite_store.hpp"
#include "util/process_facts.hpp"

namespace clk::store::sqlite {

using namespace std::chrono;

void SqliteStore::renew(const RenewRequest& request) {
  WriteTransaction tx(m_db);
  auto now = now_ms();
  // The owner's proof first: nothing is renewed, lost or removed in the name
  // of an id whose secret the caller does not have.
  if (!proves_owner(request.owner, request.secret)) {
    record_refused(request.ns, request.resources, request.owner, std::nullopt, {},
                   describe(request.caller), now);
    tx.commit();
    throw refusal_error(Operation::renew, {Refusal::not_proven, request.resources.front()},
                        request.owner);
  }
  std::vector<Refused> lost;
  auto find = m_db.prepare("SELECT " CLOCK_LEASE_COLUMNS
                           " FROM leases WHERE namespace = ?1 AND resource = ?2 AND owner = ?3");
  for (std::size_t i = 0; i < request.resources.size(); ++i) {
    const auto& resource = request.resources[i];
    find.bind(1, request.ns).bind(2, resource.str()).bind(3, request.owner.str());
    std::optional<LeaseRow> row;
    if (find.step())
      row = sqlite::read_lease(find);
    find.reset();
    bool token_ok = request.tokens.empty() || (row && row->lease.token == request.tokens[i]);
    bool live = row && (!row->lease.expires_at || sqlite::ms_of(*row->lease.expires_at) > now);
    if (row && live && token_ok)
      continue;  // proven with the owner above
    std::optional<lock::Token> token;
    if (!request.tokens.empty())
      token = request.tokens[i];
    if (!row) {
      lost.push_back({Refusal::gone, resource});
      if (held_once_by(request.ns, resource, request.owner, request.secret))
        record_lost_gone(request.ns, resource, request.owner, token, now);
    } else if (!token_ok) {
      // Held under another token: recorded with the token the renewer had.
      lost.push_back({Refusal::other_token, resource});
      lock::Lease lease = row->lease;
      lease.token = *token;
      record(EventKind::lost, lease, now, std::nullopt);
    } else {
      lost.push_back({Refusal::expired, resource});
      remove_lease(row->lease);
      auto expires_at = sqlite::ms_of(*row->lease.expires_at);
      record(EventKind::lost, row->lease, now, expires_at - sqlite::ms_of(row->lease.acquired_at));
    }
  }
  if (!lost.empty()) {
    tx.commit();  // keep the record of what was lost
    throw refusal_error(Operation::renew, lost.front(), request.owner);
  }
  auto update = m_db.prepare(
      "UPDATE leases SET renewed_at = ?4, expires_at = ?5"
      " WHERE namespace = ?1 AND resource = ?2 AND owner = ?3 AND expires_at IS NOT NULL");
  for (const auto& resource : request.resources) {
    update.bind(1, request.ns)
        .bind(2, resource.str())
        .bind(3, request.owner.str())
        .bind(4, now)
        .bind(5, expiry(request.ttl, now));
    update.run();
    update.reset();
  }
  tx.commit();
}

// As renew(): the owner's proof first, then each lease must be live under
// its token; a refusal is thrown (after committing its record).
void SqliteStore::check_still_held(const RenewRequest& held, std::int64_t now,
                                   WriteTransaction& tx) {
  if (!proves_owner(held.owner, held.secret)) {
    record_refused(held.ns, held.resources, held.owner, std::nullopt, {}, describe(held.caller),
                   now);
    tx.commit();
    throw refusal_error(Operation::renew, {Refusal::not_proven, held.resources.front()},
                        held.owner);
  }
  auto find = m_db.prepare("SELECT " CLOCK_LEASE_COLUMNS
                           " FROM leases WHERE namespace = ?1 AND resource = ?2 AND owner = ?3");
  for (std::size_t i = 0; i < held.resources.size(); ++i) {
    const auto& resource = held.resources[i];
    find.bind(1, held.ns).bind(2, resource.str()).bind(3, held.owner.str());
    std::optional<LeaseRow> row;
    if (find.step())
      row = sqlite::read_lease(find);
    find.reset();
    if (!row)
      throw refusal_error(Operation::renew, {Refusal::gone, resource}, held.owner);
    if (!held.tokens.empty() && row->lease.token != held.tokens[i])
      throw refusal_error(Operation::renew, {Refusal::other_token, resource}, held.owner);
    if (row->lease.expires_at && sqlite::ms_of(*row->lease.expires_at) <= now)
      throw refusal_error(Operation::renew, {Refusal::expired, resource}, held.owner);
  }
}

// The proof and the leases are checked first (check_still_held); only then
// is the list written, on every lease or none.
void SqliteStore::note_leftovers(const LeftoversNote& note) {
  const auto& held = note.held;
  WriteTransaction tx(m_db);
  auto now = now_ms();
  check_still_held(held, now, tx);
  std::optional<std::string> leftovers;
  if (!note.leftovers.empty())
    leftovers = encode_leftovers(note.leftovers);
  auto update = m_db.prepare(
      "UPDATE leases SET leftovers = ?4 WHERE namespace = ?1 AND resource = ?2 AND owner = ?3");
  for (const auto& resource : held.resources) {
    update.bind(1, held.ns)
        .bind(2, resource.str())
        .bind(3, held.owner.str())
        .bind_text_or_null(4, leftovers);
    update.run();
    update.reset();
  }
  tx.commit();
}

// Polled every few hundred ms by a holder, so it reads PRAGMA data_version
// (microseconds) and re-reads the leases only when another process committed
// since they were last found held: our own commits do not change it. An
// expiry changes nothing in the file; the holder's own deadline covers it.
bool SqliteStore::still_holds(const RenewRequest& held) {
  auto version = m_db.data_version();
  std::string holder = held.ns + '\n' + held.owner.str();
  if (version == m_held_version && holder == m_held_owner)
    return true;
  sqlite::ReadTransaction tx(m_db);
  auto now = now_ms();
  auto find = m_db.prepare("SELECT " CLOCK_LEASE_COLUMNS
                           " FROM leases WHERE namespace = ?1 AND resource = ?2 AND owner = ?3");
  for (std::size_t i = 0; i < held.resources.size(); ++i) {
    find.bind(1, held.ns).bind(2, held.resources[i].str()).bind(3, held.owner.str());
    if (!find.step())
      return false;
    auto row = sqlite::read_lease(find);
    find.reset();
    bool token_ok = held.tokens.empty() || row.lease.token == held.tokens[i];
    bool live = !row.lease.expires_at || sqlite::ms_of(*row.lease.expires_at) > now;
    if (!token_ok || !live)
      return false;
  }
  m_held_version = version;
  m_held_owner = std::move(holder);
  return true;
}

std::vector<Released> SqliteStore::release(const ReleaseRequest& request) {
  WriteTransaction tx(m_db);
  auto now = now_ms();
  std::vector<Released> released;
  std::vector<Refused> failures;
  // Each lease comes with whether the secret proves its ownership (its hash
  // matches the one the lease keeps, or it keeps none: granted before owner
  // secrets), from the same statement.
  constexpr int k_proven_column = 19;  // after the CLOCK_LEASE_COLUMNS
  struct Found {
    LeaseRow row;
    bool proven;
  };
  auto hash = secret_hash(request.secret);
  for (const auto& resource : request.resources) {
    auto find = m_db.prepare(k_find_leases_to_release);
    find.bind(1, request.ns).bind(2, resource.str());
    if (request.force) {
      find.bind_null(3);
    } else {
      find.bind(3, request.owner ? request.owner->str() : std::string());
    }
    if (hash)
      find.bind(4, *hash);
    else
      find.bind_null(4);
    std::vector<Found> rows;
    while (find.step())
      rows.push_back({sqlite::read_lease(find), find.integer(k_proven_column) != 0});
    if (rows.empty()) {
      failures.push_back({request.force                               ? Refusal::nobody_holds
                          : held_by_others(request.ns, resource, now) ? Refusal::other_owner
                                                                      : Refusal::not_held,
                          resource});
      continue;
    }
    Released result{resource, 0, 0};
    bool refused = false;
    for (const auto& [row, proven] : rows) {
      const auto& lease = row.lease;
      bool expired = lease.expires_at && sqlite::ms_of(*lease.expires_at) <= now;
      auto held = now - sqlite::ms_of(lease.acquired_at);
      if (request.force) {
        remove_lease(lease);
        record(expired ? EventKind::expired : EventKind::forced, lease, now, held,
               expired ? std::string() : describe(request.caller));
        ++result.holders_removed;
      } else if (!expired && !proven) {
        // Changes nothing but history: the holder keeps its lease.
        record(EventKind::refused, lease, now, std::nullopt, describe(request.caller));
        failures.push_back({Refusal::not_proven, resource});
        refused = true;
      } else if (expired) {
        remove_lease(lease);
        record(EventKind::expired, lease, sqlite::ms_of(*lease.expires_at),
               sqlite::ms_of(*lease.expires_at) - sqlite::ms_of(lease.acquired_at));
        failures.push_back({Refusal::expired, resource});
      } else if (lease.depth > 1) {
        auto stmt = m_db.prepare(
            "UPDATE leases SET depth = depth - 1"
            " WHERE namespace = ?1 AND resource = ?2 AND owner = ?3");
        stmt.bind(1, lease.ns).bind(2, resource.str()).bind(3, lease.owner.str()).run();
        result.remaining_depth = lease.depth - 1;
      } else {
        remove_lease(lease);
        const RunExit* exit = request.exit ? &*request.exit : nullptr;
        record(EventKind::released, lease, now, held, by_of(request.caller, lease.info),
               std::nullopt, exit);
        if (exit)
          count_run_result(lease, now, held, *exit);
        if (request.succeeded)
          record_success(lease);
        result.holders_removed = 1;
      }
    }
    if (!refused)
      released.push_back(result);
  }
  tx.commit();
  if (!failures.empty())
    throw refusal_error(Operation::release, failures.front(), request.owner);
  return released;
}

// Whether another owner holds a live lease on exactly this resource: what a
// release by the wrong owner id finds (refused as other_owner, not not_held).
bool SqliteStore::held_by_others(const std::string& ns, const lock::Resource& resource,
                                 std::int64_t now) {
  auto stmt = m_db.prepare(
      "SELECT EXISTS (SELECT 1 FROM leases WHERE namespace = ?1 AND resource = ?2"
      "                 AND (expires_at IS NULL OR expires_at > ?3))");
  stmt.bind(1, ns).bind(2, resource.str()).bind(3, now);
  stmt.step();
  return stmt.integer(0) != 0;
}

void SqliteStore::remove_lease(const lock::Lease& lease) {
  auto stmt = m_db.prepare(k_remove_lease);
  stmt.bind(1, lease.ns).bind(2, lease.resource.str()).bind(3, lease.owner.str()).run();
}

}  // namespace clk::store::sqlite
