// The SQLite Store. Every operation is one IMMEDIATE transaction: SQLite's
// write lock serializes writers across processes, so "check for conflicts,
// then insert" cannot race. The clock is read once per transaction, inside
// it: the host's real-time clock, one clock for every process on the host.
#include "store/sqlite/store.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <random>
#include <set>
#include <thread>

#include "error.hpp"
#include "lock/conflict.hpp"
#include "store/database_url.hpp"
#include "store/gc_pacing.hpp"
#include "store/migration.hpp"
#include "store/sqlite/db.hpp"
#include "store/sqlite/expected_runs.hpp"
#include "store/sqlite/rows.hpp"
#include "util/filesystem_kind.hpp"
#include "util/process_facts.hpp"
#include "util/random_seed.hpp"
#include "util/sha256.hpp"

namespace clk::store {

namespace {

using namespace std::chrono;
using sqlite::Database;
using sqlite::LeaseRow;
using sqlite::Statement;
using sqlite::WaiterRow;
using sqlite::WriteTransaction;

constexpr milliseconds k_busy_timeout{30'000};

// The resource and its ancestors, for `resource IN (…)`.
std::vector<std::string> self_and_ancestors(const lock::Resource& resource) {
  auto names = resource.ancestors();
  names.push_back(resource.str());
  return names;
}

// "?F, ?F+1, …": one parameter per name, from ?F on. A bound list parses in a
// fraction of what a json_each() subquery over one JSON parameter did, and
// the statement for each depth is prepared once per connection.
std::string parameters_from(int first, std::size_t count) {
  std::string out;
  for (std::size_t i = 0; i < count; ++i)
    out += (i ? ", ?" : "?") + std::to_string(first + static_cast<int>(i));
  return out;
}

// The hash a lease keeps of its owner's secret; NULL (no proof needed) for
// an empty secret.
std::optional<std::string> secret_hash(const std::string& secret) {
  if (secret.empty())
    return std::nullopt;
  return util::sha256_hex(secret);
}

// An acquirer as the caller of a refused re-entry.
Caller caller_of(const LockRequest& request) {
  return {request.info.user, request.info.host, request.info.pid, {}};
}

// Refuses file systems on which SQLite's POSIX locks are not reliable.
void check_local_filesystem(const std::filesystem::path& folder) {
  if (auto name = util::network_filesystem_of(folder)) {
    throw Error(ExitCode::local_database,
                "the SQLite database folder " + folder.string() + " is on " + *name +
                    ", where SQLite's file locking is unsafe; use PostgreSQL, a local path, "
                    "or set sqlite.allow_network_filesystem = true if you are sure");
  }
}

// The statements of a holder's release, named so that use_idle_time() can
// prepare them ahead: the statement cache knows a statement by the address
// of its text.
constexpr const char* k_find_leases_to_release =
    "SELECT " CLOCK_LEASE_COLUMNS
    ", secret_hash IS NULL OR secret_hash = ?4"
    " FROM leases WHERE namespace = ?1 AND resource = ?2"
    " AND (?3 IS NULL OR owner = ?3)";
constexpr const char* k_remove_lease =
    "DELETE FROM leases WHERE namespace = ?1 AND resource = ?2 AND owner = ?3";
constexpr const char* k_record_success =
    "INSERT INTO last_success (namespace, resource, started_at, owner, host, token)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
    " ON CONFLICT (namespace, resource) DO UPDATE SET started_at = excluded.started_at,"
    "   owner = excluded.owner, host = excluded.host, token = excluded.token"
    " WHERE excluded.started_at >= last_success.started_at";

class SqliteStore final : public Store {
 public:
  explicit SqliteStore(std::string path) : m_db(std::move(path), k_busy_timeout) { migrate(); }

  Attempt try_acquire(const LockRequest& request, bool queue) override;
  void leave_queue(const LockRequest& request) override;
  void record_missed_run(const LockRequest& request, EventKind kind,
                         const std::optional<InTheWay>& in_the_way) override;
  void wait_for_change(steady_clock::time_point until) override;
  void renew(const RenewRequest& request) override;
  bool still_holds(const RenewRequest& held) override;
  std::optional<milliseconds> still_holds_interval() const override { return milliseconds(200); }
  std::vector<Released> release(const ReleaseRequest& request) override;
  // Missed runs: store/sqlite/expected_runs.cpp.
  void expect_runs(const Expectation& expectation) override {
    sqlite::expect_runs(m_db, expectation, now_ms());
  }
  ExpectedRuns expected_runs(const ExpectedQuery& query) override {
    return sqlite::expected_runs(m_db, query, now_ms());
  }
  Snapshot status(const StatusQuery& query) override;
  std::vector<HistoryEvent> history(const HistoryQuery& query) override;
  GcReport gc(const GcOptions& options) override;
  void migrate() override;
  // While clock run's command runs: the release's statements prepared, so
  // that their parse is off the path once the command ends, and the WAL
  // checkpointed when due.
  void use_idle_time() noexcept override {
    try {
      for (const char* sql : {k_find_leases_to_release, k_remove_lease, k_record_success})
        m_db.prepare(sql);
    } catch (const std::exception&) {
      // The release prepares them itself, and reports what fails then.
    }
    m_db.checkpoint_when_idle();
  }
  bool may_exit_without_closing() const override { return true; }
  // One file on one host: nothing to warn about.
  std::vector<std::string> setup_warnings() override { return {}; }

 private:
  std::int64_t now_ms();
  bool anything_related(const std::string& ns, const lock::Resource& resource);
  std::vector<LeaseRow> related_leases(const std::string& ns, const lock::Resource& resource);
  std::vector<WaiterRow> related_waiters(const std::string& ns, const lock::Resource& resource,
                                         std::int64_t now, const lock::OwnerId* own = nullptr);
  std::vector<lock::Lease> live_leases_dropping_expired(std::vector<LeaseRow> rows,
                                                        std::int64_t now);
  void record(EventKind kind, const lock::Lease& lease, std::int64_t at,
              std::optional<std::int64_t> held_ms, const std::string& by = "",
              const std::optional<std::string>& acquired_hash = std::nullopt);
  void record_refused(const std::string& ns, const std::vector<lock::Resource>& resources,
                      const lock::OwnerId& owner, const std::optional<lock::Mode>& mode,
                      const lock::OwnerInfo& claimed, const std::string& by, std::int64_t at);
  void record_missed(const LockRequest& request, EventKind kind,
                     const std::optional<InTheWay>& in_the_way, std::int64_t at,
                     const std::optional<PeriodRun>& done_by = std::nullopt);
  std::optional<PeriodRun> period_done(const LockRequest& request, std::int64_t now);
  void record_success(const lock::Lease& lease);
  void record_lost_gone(const std::string& ns, const lock::Resource& resource,
                        const lock::OwnerId& owner, std::optional<lock::Token> token,
                        std::int64_t at);
  void remove_lease(const lock::Lease& lease);
  bool proves(const lock::Lease& lease, const std::string& secret);
  bool proves_owner(const lock::OwnerId& owner, const std::string& secret);
  bool held_once_by(const std::string& ns, const lock::Resource& resource,
                    const lock::OwnerId& owner, const std::string& secret);
  std::int64_t next_token();
  void enqueue(const LockRequest& request, std::int64_t now,
               const std::vector<std::optional<WaiterRow>>& own_entries);
  void dequeue(const LockRequest& request);
  void drop_waiter(const std::string& ns, const lock::Resource& resource,
                   const lock::OwnerId& owner);
  Grant grant(const LockRequest& request, const lock::Resource& resource, std::int64_t now);
  Grant reenter(const LockRequest& request, const LeaseRow& held, std::int64_t now);
  bool may_close_cycle(const LockRequest& request, std::int64_t now);
  std::optional<Cycle> find_cycle(const LockRequest& request,
                                  const std::vector<lock::Lease>& blocking_leases,
                                  const std::vector<lock::Waiter>& blocking_waiters,
                                  std::int64_t now);
  bool held_by_others(const std::string& ns, const lock::Resource& resource, std::int64_t now);
  std::optional<std::int64_t> expiry(milliseconds ttl, std::int64_t now) const {
    return ttl.count() == 0 ? std::nullopt : std::optional(now + ttl.count());
  }

  Database m_db;
  std::int64_t m_seen_version = -1;  // data_version when an acquire was last blocked
  // still_holds(): the data_version at which `m_held_owner` last held its leases.
  std::int64_t m_held_version = -1;
  std::string m_held_owner;
};

// The same clock that julianday('now') reads (SQLite asks the C library for
// the real time, so libfaketime fakes both alike), without a statement to
// parse: the system clock in whole milliseconds since the Unix epoch.
std::int64_t SqliteStore::now_ms() {
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

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

// `acquired_hash`: an 'acquired' record keeps its lease's secret hash, so that
// a renewal that finds the lease gone records 'lost' only for the owner
// that held it (held_once_by()).
void SqliteStore::record(EventKind kind, const lock::Lease& lease, std::int64_t at,
                         std::optional<std::int64_t> held_ms, const std::string& by,
                         const std::optional<std::string>& acquired_hash) {
  auto stmt = m_db.prepare(
      "INSERT INTO history (at, event, namespace, resource, owner, mode, token, held_ms, host, ip,"
      " pid, user, command, by, secret_hash, db_user) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9,"
      " ?10, ?11, ?12, ?13, ?14, ?15, ?16)");
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
      .bind(16, util::user_name());
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

// Whether `secret` proves ownership of the lease: its hash matches the one
// the lease keeps, or the lease keeps none (granted before owner secrets).
bool SqliteStore::proves(const lock::Lease& lease, const std::string& secret) {
  auto stmt = m_db.prepare(
      "SELECT secret_hash IS NULL OR secret_hash = ?4 FROM leases"
      " WHERE namespace = ?1 AND resource = ?2 AND owner = ?3");
  stmt.bind(1, lease.ns).bind(2, lease.resource.str()).bind(3, lease.owner.str());
  if (auto hash = secret_hash(secret))
    stmt.bind(4, *hash);
  else
    stmt.bind_null(4);
  return stmt.step() && stmt.integer(0) != 0;
}

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

void SqliteStore::remove_lease(const lock::Lease& lease) {
  auto stmt = m_db.prepare(k_remove_lease);
  stmt.bind(1, lease.ns).bind(2, lease.resource.str()).bind(3, lease.owner.str()).run();
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
    // the queue, as on PostgreSQL (one lock model, SPEC §5).
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
                    std::nullopt};
  if (auto expires = expiry(request.ttl, now))
    lease.expires_at = sqlite::instant_of(*expires);
  auto stmt = m_db.prepare("INSERT INTO leases (" CLOCK_LEASE_COLUMNS
                           ", secret_hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7, ?7, ?8, ?9, ?10,"
                           " ?11, ?12, ?13, ?14, ?15, ?17, ?16)");
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
  for (std::size_t i = 0; i < request.resources.size(); ++i) {
    // Re-entering joins a lease: only its owner may, proven by the secret.
    const auto& own = own_leases[i];
    if (decisions[i].verdict == lock::Verdict::reenter && own &&
        !proves(own->lease, request.secret)) {
      record(EventKind::refused, own->lease, now, std::nullopt, describe(caller_of(request)));
      tx.commit();  // keep the record of the refusal, and what was found expired
      throw refusal_error(Operation::acquire, {Refusal::not_proven, request.resources[i]},
                          request.owner);
    }
  }
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

// Only the first blocked attempt of a request (a cycle formed later is
// closed, and found, by the request that forms it), by an owner that others
// can be waiting for (it holds a live lease or queue entry), can close a
// cycle. Re-attempts of a queued request skip the search, so many waiters
// polling cost little.
bool SqliteStore::may_close_cycle(const LockRequest& request, std::int64_t now) {
  auto stmt = m_db.prepare(
      "SELECT NOT EXISTS (SELECT 1 FROM waiters WHERE owner = ?1 AND request_id = ?2"
      "                     AND expires_at > ?3)"
      "   AND (EXISTS (SELECT 1 FROM leases WHERE owner = ?1"
      "                  AND (expires_at IS NULL OR expires_at > ?3))"
      "        OR EXISTS (SELECT 1 FROM waiters WHERE owner = ?1 AND expires_at > ?3))");
  stmt.bind(1, request.owner.str()).bind(2, request.request_id).bind(3, now);
  stmt.step();
  return stmt.integer(0) != 0;
}

// Follows "waits for" edges from the owners in our way: an owner waiting (in
// the queue) for a resource that a conflicting lease (or a holder of a full
// semaphore), or a conflicting queue entry ahead of it, of ours or of an
// owner further along the chain holds
// (the edges of waits_for() in sql/postgres/functions/20_acquire.sql).
// Reaching ourselves closes a cycle.
std::optional<Cycle> SqliteStore::find_cycle(const LockRequest& request,
                                             const std::vector<lock::Lease>& blocking_leases,
                                             const std::vector<lock::Waiter>& blocking_waiters,
                                             std::int64_t now) {
  struct Step {
    lock::OwnerId owner;
    std::string host;
    Cycle path;  // the links that lead to this owner, the requester's first
  };
  auto first_link = [&](const lock::Resource& resource) {
    return Cycle{{request.owner, request.info.host, resource}};
  };
  std::vector<Step> frontier;
  for (const auto& lease : blocking_leases)
    frontier.push_back({lease.owner, lease.info.host, first_link(lease.resource)});
  for (const auto& waiter : blocking_waiters)
    frontier.push_back({waiter.owner, waiter.info.host, first_link(waiter.resource)});
  std::set<lock::OwnerId> visited;
  constexpr std::size_t k_max_owners = 256;
  while (!frontier.empty() && visited.size() < k_max_owners) {
    Step step = std::move(frontier.back());
    frontier.pop_back();
    if (!visited.insert(step.owner).second)
      continue;
    auto stmt = m_db.prepare("SELECT " CLOCK_WAITER_COLUMNS
                             " FROM waiters WHERE owner = ?1 AND expires_at > ?2");
    stmt.bind(1, step.owner.str()).bind(2, now);
    std::vector<lock::Waiter> waits;
    while (stmt.step())
      waits.push_back(sqlite::read_waiter(stmt).waiter);
    for (const auto& wait : waits) {
      struct Edge {
        lock::OwnerId owner;
        std::string host;
      };
      std::vector<Edge> edges;
      std::vector<lock::Lease> live;
      for (auto& row : related_leases(wait.ns, wait.resource)) {
        const auto& lease = row.lease;
        if (!lease.expires_at || sqlite::ms_of(*lease.expires_at) > now)
          live.push_back(lease);
      }
      // A semaphore's holders are in the way of its waiter only when it is
      // full (they do not conflict pairwise).
      auto same_semaphore = [&](const lock::Lease& lease) {
        return wait.slots > 0 && lease.slots > 0 && lease.resource == wait.resource &&
               lease.owner != wait.owner;
      };
      auto holders = std::count_if(live.begin(), live.end(), same_semaphore);
      for (const auto& lease : live) {
        bool full_semaphore = same_semaphore(lease) && holders >= wait.slots;
        if (lock::conflicts(lock::claim_of(wait), lock::claim_of(lease)) || full_semaphore)
          edges.push_back({lease.owner, lease.info.host});
      }
      for (auto& row : related_waiters(wait.ns, wait.resource, now)) {
        const auto& ahead = row.waiter;
        if (ahead.position < wait.position &&
            lock::conflicts(lock::claim_of(wait), lock::claim_of(ahead)))
          edges.push_back({ahead.owner, ahead.info.host});
      }
      for (auto& edge : edges) {
        Cycle path = step.path;
        path.push_back({step.owner, step.host, wait.resource});
        if (edge.owner == request.owner)
          return path;
        frontier.push_back({edge.owner, edge.host, std::move(path)});
      }
    }
  }
  return std::nullopt;
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

// Without the owner's proof, the entries stay and the attempt is recorded.
void SqliteStore::leave_queue(const LockRequest& request) {
  WriteTransaction tx(m_db);
  if (proves_owner(request.owner, request.secret))
    dequeue(request);
  else
    record_refused(request.ns, request.resources, request.owner, std::nullopt, {}, "", now_ms());
  tx.commit();
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

// SQLite cannot notify, but PRAGMA data_version changes whenever another
// process commits, and reading it costs microseconds: poll it briefly and
// often so a waiter is woken within a few milliseconds of a release.
void SqliteStore::wait_for_change(steady_clock::time_point until) {
  thread_local std::minstd_rand random{util::random_seed()};
  auto interval = microseconds(500);
  constexpr auto k_longest_interval = microseconds(8'000);
  while (steady_clock::now() < until) {
    if (m_db.data_version() != m_seen_version)
      return;
    auto jittered = interval + microseconds(random() % (interval.count() / 2 + 1));
    std::this_thread::sleep_until(std::min(until, steady_clock::now() + jittered));
    interval = std::min(k_longest_interval, interval * 3 / 2);
  }
}

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
    if (row && live && token_ok) {
      if (!proves(row->lease, request.secret)) {
        lost.push_back({Refusal::not_proven, resource});
        record(EventKind::refused, row->lease, now, std::nullopt, describe(request.caller));
      }
      continue;
    }
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
  // Each lease comes with whether the secret proves its ownership, as
  // proves() would answer, from the same statement.
  constexpr int k_proven_column = 18;  // after the CLOCK_LEASE_COLUMNS
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
        record(EventKind::released, lease, now, held, by_of(request.caller, lease.info));
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

Snapshot SqliteStore::status(const StatusQuery& query) {
  sqlite::ReadTransaction tx(m_db);
  Snapshot snapshot;
  auto now = now_ms();
  snapshot.now = sqlite::instant_of(now);
  std::string prefix = query.prefix ? query.prefix->str() : "";
  auto bind_filters = [&](Statement& stmt) {
    if (query.ns)
      stmt.bind(1, *query.ns);
    else
      stmt.bind_null(1);
    if (query.prefix) {
      stmt.bind(2, prefix).bind(3, query.prefix->descendant_floor());
      stmt.bind(4, query.prefix->descendant_ceiling());
    } else {
      stmt.bind_null(2).bind_null(3).bind_null(4);
    }
  };
  auto leases =
      m_db.prepare("SELECT " CLOCK_LEASE_COLUMNS
                   " FROM leases WHERE (?1 IS NULL OR namespace = ?1)"
                   "   AND (?2 IS NULL OR resource = ?2 OR (resource > ?3 AND resource < ?4))"
                   "   AND (?6 OR expires_at IS NULL OR expires_at > ?5)"
                   " ORDER BY namespace, resource, acquired_at");
  bind_filters(leases);
  leases.bind(5, now).bind(6, std::int64_t{query.include_expired ? 1 : 0});
  while (leases.step()) {
    auto row = sqlite::read_lease(leases);
    bool expired = row.lease.expires_at && sqlite::ms_of(*row.lease.expires_at) <= now;
    snapshot.holders.push_back(std::move(row.lease));
    snapshot.holder_expired.push_back(expired);
  }
  auto waiters =
      m_db.prepare("SELECT " CLOCK_WAITER_COLUMNS
                   " FROM waiters WHERE (?1 IS NULL OR namespace = ?1)"
                   "   AND (?2 IS NULL OR resource = ?2 OR (resource > ?3 AND resource < ?4))"
                   "   AND expires_at > ?5 ORDER BY position");
  bind_filters(waiters);
  waiters.bind(5, now);
  while (waiters.step())
    snapshot.waiters.push_back(sqlite::read_waiter(waiters).waiter);
  auto run_counts = m_db.prepare(
      "SELECT namespace, resource, outcome, count"
      " FROM run_counts WHERE (?1 IS NULL OR namespace = ?1)"
      "   AND (?2 IS NULL OR resource = ?2 OR (resource > ?3 AND resource < ?4))"
      " ORDER BY namespace, resource, outcome");
  bind_filters(run_counts);
  while (run_counts.step())
    snapshot.run_counts.push_back(sqlite::read_run_count(run_counts));
  return snapshot;
}

std::vector<HistoryEvent> SqliteStore::history(const HistoryQuery& query) {
  sqlite::ReadTransaction tx(m_db);
  auto stmt =
      m_db.prepare("SELECT " CLOCK_HISTORY_COLUMNS
                   " FROM history WHERE (?1 IS NULL OR namespace = ?1)"
                   "   AND (?2 IS NULL OR resource = ?2 OR (resource > ?3 AND resource < ?4))"
                   "   AND (?6 IS NULL OR event = ?6)"
                   " ORDER BY id DESC LIMIT ?5");
  if (query.ns)
    stmt.bind(1, *query.ns);
  else
    stmt.bind_null(1);
  if (query.prefix) {
    stmt.bind(2, query.prefix->str())
        .bind(3, query.prefix->descendant_floor())
        .bind(4, query.prefix->descendant_ceiling());
  } else {
    stmt.bind_null(2).bind_null(3).bind_null(4);
  }
  stmt.bind(5, std::int64_t{query.limit});
  if (query.event)
    stmt.bind(6, to_string(*query.event));
  else
    stmt.bind_null(6);
  std::vector<HistoryEvent> events;
  while (stmt.step())
    events.push_back(sqlite::read_history(stmt));
  return events;
}

// Each batch is its own short transaction, paced (gc_pacing.hpp) so that
// acquirers queue behind one short batch at most, never behind the whole
// clean-up.
GcReport SqliteStore::gc(const GcOptions& options) {
  GcReport report;
  BatchPacer pacer(options.batch_size);
  // Runs `batch(rows)` (which returns how many rows it found) as paced
  // transactions until one finds fewer rows than it asked for.
  auto in_batches = [&](const std::function<std::int64_t(std::int64_t rows)>& batch) {
    std::int64_t total = 0;
    for (;;) {
      const std::int64_t rows = pacer.rows();
      auto started = std::chrono::steady_clock::now();
      WriteTransaction tx(m_db);
      std::int64_t found = batch(rows);
      tx.commit();
      pacer.took(std::chrono::steady_clock::now() - started);
      total += found;
      if (found < rows)
        return total;
    }
  };
  std::int64_t dry_offset = 0;  // a dry run deletes nothing: the next batch skips these
  report.expired_leases = in_batches([&](std::int64_t rows) {
    auto now = now_ms();
    auto find = m_db.prepare("SELECT " CLOCK_LEASE_COLUMNS
                             " FROM leases WHERE expires_at <= ?1 LIMIT ?2 OFFSET ?3");
    find.bind(1, now).bind(2, rows).bind(3, dry_offset);
    std::vector<LeaseRow> found;
    while (find.step())
      found.push_back(sqlite::read_lease(find));
    auto count = static_cast<std::int64_t>(found.size());  // before found is moved from
    if (!options.dry_run)
      live_leases_dropping_expired(std::move(found), now);
    else
      dry_offset += count;
    return count;
  });
  auto count_or_delete = [&](const char* count_sql, const char* delete_sql, std::int64_t cutoff) {
    if (options.dry_run) {
      auto stmt = m_db.prepare(count_sql);
      stmt.bind(1, cutoff).step();
      return stmt.integer(0);
    }
    return in_batches([&](std::int64_t rows) {
      m_db.prepare(delete_sql).bind(1, cutoff).bind(2, rows).run();
      return static_cast<std::int64_t>(m_db.changes());
    });
  };
  auto now = now_ms();
  report.dead_waiters =
      count_or_delete("SELECT count(*) FROM waiters WHERE expires_at <= ?1",
                      "DELETE FROM waiters WHERE position IN"
                      " (SELECT position FROM waiters WHERE expires_at <= ?1 LIMIT ?2)",
                      now);
  if (options.history_older_than) {
    report.history_rows = count_or_delete(
        "SELECT count(*) FROM history WHERE at < ?1",
        "DELETE FROM history WHERE id IN (SELECT id FROM history WHERE at < ?1 LIMIT ?2)",
        now - options.history_older_than->count());
    // The run counters of resources nobody has used for longer than the
    // history kept: no history, lease or queue entry left (as gc_batch() on
    // PostgreSQL). A dry run deleted no history, so it counts by the cutoff.
    report.idle_counters = count_or_delete(
        "SELECT count(*) FROM run_counts c WHERE NOT EXISTS (SELECT 1 FROM history h"
        "   WHERE h.namespace = c.namespace AND h.resource = c.resource AND h.at >= ?1)"
        " AND NOT EXISTS (SELECT 1 FROM leases l"
        "   WHERE l.namespace = c.namespace AND l.resource = c.resource)"
        " AND NOT EXISTS (SELECT 1 FROM waiters w"
        "   WHERE w.namespace = c.namespace AND w.resource = c.resource)",
        "DELETE FROM run_counts WHERE (namespace, resource, outcome) IN"
        " (SELECT c.namespace, c.resource, c.outcome FROM run_counts c"
        "  WHERE ?1 IS NOT NULL AND NOT EXISTS (SELECT 1 FROM history h"
        "    WHERE h.namespace = c.namespace AND h.resource = c.resource)"
        "  AND NOT EXISTS (SELECT 1 FROM leases l"
        "    WHERE l.namespace = c.namespace AND l.resource = c.resource)"
        "  AND NOT EXISTS (SELECT 1 FROM waiters w"
        "    WHERE w.namespace = c.namespace AND w.resource = c.resource)"
        "  LIMIT ?2)",
        now - options.history_older_than->count());
  }
  return report;
}

void SqliteStore::migrate() {
  const auto& migrations = sql::sqlite_migrations();
  auto version_of = [&] {
    auto stmt = m_db.prepare("PRAGMA user_version");
    stmt.step();
    return stmt.integer(0);
  };
  if (version_of() >= migrations.back().version)
    return;
  WriteTransaction tx(m_db);
  auto version = version_of();  // another process may have migrated meanwhile
  for (const auto& migration : migrations) {
    if (migration.version <= version)
      continue;
    m_db.exec(std::string(migration.sql).c_str());
    // PRAGMA takes no parameters; the version is our own constant.
    m_db.exec(("PRAGMA user_version = " + std::to_string(migration.version)).c_str());
  }
  tx.commit();
}

}  // namespace

std::unique_ptr<Store> make_sqlite_store(const StoreOptions& options) {
  std::filesystem::path path = sqlite_path_of(options.url);
  auto folder = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  if (error) {
    throw Error(ExitCode::local_database,
                "cannot create the folder " + folder.string() +
                    " for the SQLite database: " + error.message() +
                    " (set XDG_STATE_HOME to a writable folder, or choose the database "
                    "with CLOCK_DATABASE_URL or --database)");
  }
  if (!options.allow_network_filesystem)
    check_local_filesystem(folder);
  return std::make_unique<SqliteStore>(path.string());
}

std::string sqlite_schema_sql() {
  std::string out;
  for (const auto& migration : sql::sqlite_migrations()) {
    out += "-- " + std::string(migration.name) + "\n" + std::string(migration.sql) + "\n";
    out += "PRAGMA user_version = " + std::to_string(migration.version) + ";\n";
  }
  return out;
}

}  // namespace clk::store
