// The SQLite Store: opening the file, its migrations, waiting for a change,
// status, history and gc. The class and the list of its files:
// store/sqlite/sqlite_store.hpp.
#include "store/sqlite/store.hpp"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <random>
#include <set>
#include <thread>

#include "error.hpp"
#include "store/database_url.hpp"
#include "store/gc_pacing.hpp"
#include "store/migration.hpp"
#include "store/migration_report.hpp"
#include "store/sqlite/sqlite_store.hpp"
#include "util/filesystem_kind.hpp"
#include "util/random_seed.hpp"
#include "util/sha256.hpp"

namespace clk::store::sqlite {

using namespace std::chrono;

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

// The same clock that julianday('now') reads (SQLite asks the C library for
// the real time, so libfaketime fakes both alike), without a statement to
// parse: the system clock in whole milliseconds since the Unix epoch.
std::int64_t SqliteStore::now_ms() {
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
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
  auto results = m_db.prepare(
      "SELECT namespace, resource, succeeded, failed, last_ended_at, last_exit_code,"
      "   last_exit_signal, last_held_ms"
      " FROM run_results WHERE (?1 IS NULL OR namespace = ?1)"
      "   AND (?2 IS NULL OR resource = ?2 OR (resource > ?3 AND resource < ?4))"
      " ORDER BY namespace, resource");
  bind_filters(results);
  while (results.step())
    snapshot.run_results.push_back(sqlite::read_run_results(results));
  return snapshot;
}

std::vector<HistoryEvent> SqliteStore::history(const HistoryQuery& query) {
  sqlite::ReadTransaction tx(m_db);
  auto stmt =
      // history and the period changes (migration 013), whose ids are one sequence
      m_db.prepare("SELECT " CLOCK_HISTORY_COLUMNS
                   ", NULL, NULL"
                   " FROM history WHERE (?1 IS NULL OR namespace = ?1)"
                   "   AND (?2 IS NULL OR resource = ?2 OR (resource > ?3 AND resource < ?4))"
                   "   AND (?6 IS NULL OR event = ?6)"
                   "   AND (?7 IS NULL OR at >= ?7) AND (?8 IS NULL OR host = ?8)"
                   " UNION ALL SELECT " CLOCK_PERIOD_CHANGE_COLUMNS
                   " FROM period_changes WHERE (?1 IS NULL OR namespace = ?1)"
                   "   AND (?2 IS NULL OR resource = ?2 OR (resource > ?3 AND resource < ?4))"
                   "   AND (?6 IS NULL OR ?6 = 'period_changed')"
                   "   AND (?7 IS NULL OR at >= ?7) AND (?8 IS NULL OR host = ?8)"
                   " ORDER BY 1 DESC LIMIT ?5");
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
  // The database's clock is this host's: `within` counts back from it.
  std::optional<std::int64_t> since;
  if (query.since)
    since = sqlite::ms_of(*query.since);
  if (query.within)
    since = std::max(since.value_or(INT64_MIN), now_ms() - query.within->count());
  stmt.bind(7, since);
  if (query.host)
    stmt.bind(8, *query.host);
  else
    stmt.bind_null(8);
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
    report.history_rows +=
        count_or_delete("SELECT count(*) FROM period_changes WHERE at < ?1",
                        "DELETE FROM period_changes WHERE id IN"
                        " (SELECT id FROM period_changes WHERE at < ?1 LIMIT ?2)",
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

MigrationReport SqliteStore::migrate() {
  const auto& migrations = sql::sqlite_migrations();
  auto version_of = [&] {
    auto stmt = m_db.prepare("PRAGMA user_version");
    stmt.step();
    return stmt.integer(0);
  };
  // user_version is the last migration applied: they run in order here.
  auto recorded = [&](std::int64_t version) {
    std::set<int> versions;
    for (const auto& migration : migrations)
      if (migration.version <= version)
        versions.insert(migration.version);
    return versions;
  };
  if (version_of() >= migrations.back().version) {
    if (m_migrated.latest.empty())
      m_migrated = migration_report(recorded(version_of()), recorded(version_of()), migrations);
    return m_migrated;
  }
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
  m_migrated = migration_report(version == 0 ? std::nullopt : std::optional(recorded(version)),
                                recorded(version_of()), migrations);
  return m_migrated;
}

}  // namespace clk::store::sqlite

namespace clk::store {

namespace {

// Refuses file systems on which SQLite's POSIX locks are not reliable.
void check_local_filesystem(const std::filesystem::path& folder) {
  if (auto name = util::network_filesystem_of(folder)) {
    throw Error(ExitCode::local_database,
                "the SQLite database folder " + folder.string() + " is on " + *name +
                    ", where SQLite's file locking is unsafe; use PostgreSQL, a local path, "
                    "or set sqlite.allow_network_filesystem = true if you are sure");
  }
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
  return std::make_unique<sqlite::SqliteStore>(path.string());
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
