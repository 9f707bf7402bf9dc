// The Store interface: every operation on the lock table, shaped so that each
// is one transaction (one round trip on PostgreSQL) with all lease arithmetic
// on the database's clock. Commands never see SQL; the two implementations
// (store/sqlite/, store/postgres/) never include each other.
//
// Failures are clk::Error: `unavailable` (69) for a backend that cannot be
// reached (a caller may retry), `local_database` (74) for an unusable SQLite
// file, `not_owner` (77) for renew/release of a lease this owner does not hold,
// `usage` (64) for a request the lock model refuses (slot counts disagree).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lock/lease.hpp"

namespace clk::store {

using std::chrono::milliseconds;

struct LockRequest {
  std::string ns;
  std::vector<lock::Resource> resources;  // canonical order, no duplicates
  lock::Mode mode = lock::Mode::exclusive;
  int slots = 0;  // 0: a plain lock; N > 0: a counting semaphore of N
  lock::OwnerId owner;
  lock::OwnerInfo info;
  milliseconds ttl = lock::k_default_ttl;  // 0: no expiry
  // A fresh id per `clock acquire` call, so that an attempt retried after a
  // dropped connection takes effect once (no second re-entry, no new token).
  std::string request_id;
};

struct Grant {
  lock::Resource resource;
  lock::Token token = 0;
  int depth = 1;  // re-entry count after this grant
};

enum class Outcome { granted, blocked, deadlock };

struct Attempt {
  Outcome outcome = Outcome::blocked;
  std::vector<Grant> grants;                   // granted: one per resource, request order
  std::vector<lock::Lease> blocking_leases;    // blocked: who holds what is in the way
  std::vector<lock::Waiter> blocking_waiters;  // blocked: earlier waiters in the way
  std::string cycle;                           // deadlock: "owner A (host) -> x -> owner B …"
};

struct RenewRequest {
  std::string ns;
  std::vector<lock::Resource> resources;
  lock::OwnerId owner;
  std::vector<lock::Token> tokens;  // same order as resources; empty: any token of this owner
  milliseconds ttl = lock::k_default_ttl;
};

struct ReleaseRequest {
  std::string ns;
  std::vector<lock::Resource> resources;
  std::optional<lock::OwnerId> owner;  // required unless `force`
  bool force = false;
  std::string forced_by;  // "user@host", recorded in history for a forced release
};

struct Released {
  lock::Resource resource;
  int remaining_depth = 0;  // > 0: a re-entry was undone, the lock is still held
  int holders_removed = 0;  // with --force: how many leases were removed
};

struct StatusQuery {
  std::optional<std::string> ns;         // none: every namespace
  std::optional<lock::Resource> prefix;  // the resource and its descendants
  bool include_expired = false;
};

struct Snapshot {
  lock::Instant now{};  // the database's clock when the snapshot was taken
  std::vector<lock::Lease> holders;
  std::vector<lock::Waiter> waiters;  // in queue order
  std::vector<bool> holder_expired;   // per holder, true for an expired lease (with --all)
};

enum class EventKind { acquired, released, expired, forced, lost };
std::string_view to_string(EventKind kind);

struct HistoryQuery {
  std::optional<std::string> ns;
  std::optional<lock::Resource> prefix;
  int limit = 50;
};

struct HistoryEvent {
  std::int64_t id = 0;
  lock::Instant at{};
  EventKind kind = EventKind::acquired;
  std::string ns;
  lock::Resource resource;
  lock::OwnerId owner;
  lock::OwnerInfo info;
  lock::Mode mode = lock::Mode::exclusive;
  lock::Token token = 0;
  std::optional<milliseconds> held_for;  // for the end of a lease
  std::string by;                        // forced: "user@host" of who forced it
};

struct GcOptions {
  bool dry_run = false;
  std::optional<milliseconds> history_older_than;  // none: keep all history
  int batch_size = 1000;  // rows per transaction, so acquirers never wait long
};

struct GcReport {
  std::int64_t expired_leases = 0;
  std::int64_t dead_waiters = 0;
  std::int64_t history_rows = 0;
};

// How long a wait-queue entry lives unless refreshed: one TTL, capped so that
// a waiter that dies stops blocking others soon. Waiters refresh their entry
// (by another attempt) at least every quarter of this.
milliseconds waiter_lifetime(milliseconds ttl);

class Store {
 public:
  virtual ~Store() = default;

  // One attempt at taking every resource of `request`, all or none. When the
  // request is blocked and `queue` is true, the owner is entered in (or kept
  // in) the wait queue, so later conflicting requests cannot overtake it; the
  // entry lives one TTL unless refreshed by another attempt. Expired leases in
  // the way are removed and recorded as expired.
  virtual Attempt try_acquire(const LockRequest& request, bool queue) = 0;

  // Removes this request's wait-queue entries (after a timeout or interrupt).
  virtual void leave_queue(const LockRequest& request) = 0;

  // Blocks until something that may unblock a waiter happens (a release, an
  // expiry), or until `until`, whichever is first. May return early.
  virtual void wait_for_change(std::chrono::steady_clock::time_point until) = 0;

  // Extends the owner's leases to now + ttl, keeping their tokens. Throws
  // not_owner (77) if any is gone, expired or carries another token; nothing
  // is extended then.
  virtual void renew(const RenewRequest& request) = 0;

  // Whether the owner still holds a live lease on every resource of `held`
  // under its token (`held.ttl` is not used): what a renewal would find,
  // without extending anything or recording a loss. Throws like renew() when
  // the backend cannot be asked.
  virtual bool still_holds(const RenewRequest& held) = 0;

  // How often a holder may call still_holds() between renewals to learn of a
  // loss promptly: where it is cheap (SQLite re-reads the lease only after
  // another process committed); none where it costs a round trip, and a loss
  // is found by the next renewal instead (PostgreSQL).
  virtual std::optional<milliseconds> still_holds_interval() const = 0;

  // Undoes one re-entry of each resource, removing the lease at depth zero.
  // Throws not_owner (77) if the owner holds none of them (or, forced, if
  // nobody does). A lease found expired is removed, recorded as expired, and
  // reported as not_owner.
  virtual std::vector<Released> release(const ReleaseRequest& request) = 0;

  virtual Snapshot status(const StatusQuery& query) = 0;
  virtual std::vector<HistoryEvent> history(const HistoryQuery& query) = 0;
  virtual GcReport gc(const GcOptions& options) = 0;

  // Creates or migrates the schema (clock init). Commands call it lazily.
  virtual void migrate() = 0;
};

}  // namespace clk::store
