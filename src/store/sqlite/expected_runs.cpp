// Missed runs on SQLite (expected_runs.hpp). The expectation is written in
// its own short IMMEDIATE transaction: it decides nothing about who runs,
// and reads only the declaring owner's own leases, as its proof.
#include "store/sqlite/expected_runs.hpp"

#include "error.hpp"
#include "store/sqlite/rows.hpp"
#include "store/sqlite/sqlite_store.hpp"
#include "util/process_facts.hpp"

namespace clk::store::sqlite {

namespace {

// Whether every resource already carries this period: then nothing is
// written, and a run takes no write lock for its declaration.
bool already_expected(Database& db, const Expectation& expectation) {
  ReadTransaction tx(db);
  for (const auto& resource : expectation.resources) {
    auto stmt = db.prepare(
        "SELECT 1 FROM expected_runs WHERE namespace = ?1 AND resource = ?2 AND every_ms = ?3");
    stmt.bind(1, expectation.ns).bind(2, resource.str());
    stmt.bind(3, std::int64_t{expectation.every.count()});
    if (!stmt.step())
      return false;
  }
  return true;
}

// Whether expectation.owner holds a live lease on every resource, proven by
// its secret (a lease from before owner secrets keeps no hash and needs none).
bool declared_by_holder(Database& db, const Expectation& expectation, std::int64_t now_ms) {
  const auto hash = secret_hash(expectation.secret);
  for (const auto& resource : expectation.resources) {
    auto stmt = db.prepare(
        "SELECT 1 FROM leases WHERE namespace = ?1 AND resource = ?2 AND owner = ?3"
        " AND (expires_at IS NULL OR expires_at > ?4)"
        " AND (secret_hash IS NULL OR secret_hash IS ?5)");
    stmt.bind(1, expectation.ns).bind(2, resource.str()).bind(3, expectation.owner.str());
    stmt.bind(4, now_ms).bind_text_or_null(5, hash);
    if (!stmt.step())
      return false;
  }
  return true;
}

// Whether declaring expectation.every on `resource` declares or changes its
// period (the holder's lease is there: declared_by_holder).
bool period_changes(Database& db, const Expectation& expectation, const lock::Resource& resource) {
  auto stmt = db.prepare(
      "SELECT 1 FROM expected_runs WHERE namespace = ?1 AND resource = ?2 AND every_ms = ?3");
  stmt.bind(1, expectation.ns).bind(2, resource.str());
  stmt.bind(3, std::int64_t{expectation.every.count()});
  return !stmt.step();
}

// The next id of history's AUTOINCREMENT sequence, taken for a row of
// period_changes (migration 013): history and period changes are numbered
// in one order, and no later history row gets this id.
std::int64_t take_history_id(Database& db) {
  auto next = db.prepare(
      "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'history'), 0),"
      " coalesce((SELECT max(id) FROM history), 0),"
      " coalesce((SELECT max(id) FROM period_changes), 0)) + 1");
  next.step();
  const std::int64_t id = next.integer(0);
  db.prepare("UPDATE sqlite_sequence SET seq = ?1 WHERE name = 'history'").bind(1, id).run();
  if (db.changes() == 0)
    db.prepare("INSERT INTO sqlite_sequence (name, seq) VALUES ('history', ?1)").bind(1, id).run();
  return id;
}

}  // namespace

void expect_runs(Database& db, const Expectation& expectation, std::int64_t now_ms) {
  if (already_expected(db, expectation))
    return;
  WriteTransaction tx(db);
  if (!declared_by_holder(db, expectation, now_ms)) {
    throw Error(ExitCode::not_owner,
                "only the holder may declare a resource's expected period, and owner " +
                    expectation.owner.str() + " holds no live lease on every resource named");
  }
  for (const auto& resource : expectation.resources) {
    // A period declared or changed is history ('period_changed', in
    // period_changes), with the declaring lease's facts, who asked and the
    // login, as expect_runs() in sql/postgres/functions/60_expected_runs.sql;
    // read before the upsert.
    if (period_changes(db, expectation, resource)) {
      db.prepare(
            "INSERT INTO period_changes (id, at, namespace, resource, owner, mode, token, host,"
            " ip, pid, user, command, by, db_user, every_ms, previous_every_ms)"
            " SELECT ?8, ?4, l.namespace, l.resource, l.owner, l.mode, l.token, l.host, l.ip,"
            " l.pid, l.user, l.command, ?5, ?6, ?7, e.every_ms"
            " FROM leases l LEFT JOIN expected_runs e"
            "   ON e.namespace = l.namespace AND e.resource = l.resource"
            " WHERE l.namespace = ?1 AND l.resource = ?2 AND l.owner = ?3")
          .bind(1, expectation.ns)
          .bind(2, resource.str())
          .bind(3, expectation.owner.str())
          .bind(4, now_ms)
          .bind(5, describe(expectation.caller))
          .bind(6, util::user_name())
          .bind(7, std::int64_t{expectation.every.count()})
          .bind(8, take_history_id(db))
          .run();
    }
    db.prepare(
          "INSERT INTO expected_runs (namespace, resource, every_ms, declared_at)"
          " VALUES (?1, ?2, ?3, ?4)"
          " ON CONFLICT (namespace, resource) DO UPDATE SET every_ms = excluded.every_ms")
        .bind(1, expectation.ns)
        .bind(2, resource.str())
        .bind(3, std::int64_t{expectation.every.count()})
        .bind(4, now_ms)
        .run();
  }
  tx.commit();
}

ExpectedRuns expected_runs(Database& db, const ExpectedQuery& query, std::int64_t now_ms) {
  ReadTransaction tx(db);
  ExpectedRuns out;
  out.now = instant_of(now_ms);
  const std::int64_t since = query.since ? ms_of(*query.since) : now_ms;
  auto runs = db.prepare(
      "SELECT namespace, resource, every_ms, declared_at FROM expected_runs"
      " WHERE (?1 IS NULL OR namespace = ?1)"
      "   AND (?2 IS NULL OR resource = ?2 OR (resource > ?3 AND resource < ?4))"
      " ORDER BY namespace, resource");
  if (query.ns)
    runs.bind(1, *query.ns);
  else
    runs.bind_null(1);
  if (query.prefix) {
    runs.bind(2, query.prefix->str()).bind(3, query.prefix->descendant_floor());
    runs.bind(4, query.prefix->descendant_ceiling());
  } else {
    runs.bind_null(2).bind_null(3).bind_null(4);
  }
  while (runs.step()) {
    out.runs.push_back({.ns = runs.text(0),
                        .resource = lock::Resource::parse(runs.text(1)),
                        .every = std::chrono::milliseconds(runs.integer(2)),
                        .declared_at = instant_of(runs.integer(3)),
                        .successes = {}});
  }
  for (auto& run : out.runs) {
    const std::int64_t floor = since - run.every.count();
    auto successes = db.prepare(
        "SELECT started_at FROM successes"
        " WHERE namespace = ?1 AND resource = ?2 AND started_at >= ?3"
        " UNION ALL"
        " SELECT * FROM (SELECT started_at FROM successes"
        "   WHERE namespace = ?1 AND resource = ?2 AND started_at < ?3"
        "   ORDER BY started_at DESC LIMIT 1)"
        " ORDER BY 1");
    successes.bind(1, run.ns).bind(2, run.resource.str()).bind(3, floor);
    while (successes.step())
      run.successes.push_back(instant_of(successes.integer(0)));
  }
  return out;
}

}  // namespace clk::store::sqlite
