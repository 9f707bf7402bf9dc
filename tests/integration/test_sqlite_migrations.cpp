// SQLite schema upgrades in place (sql/sqlite/migrations): a database left by
// an older clock, with live leases and history, is migrated on first use and
// keeps both. They run with CLOCK_TEST_BACKEND=sqlite only.
#include <regex>
#include <string>

#include <doctest/doctest.h>

#include "harness.hpp"

using namespace clk::test;

namespace {

// The database file of the SQLite backend's URL ("sqlite:/path").
fs::path database_file(const TestEnv& env) {
  std::string url = env.url();
  REQUIRE(url.rfind("sqlite:", 0) == 0);
  return url.substr(7);
}

// Version 1 as clock 001_schema.sql made it, holding x (token 5) for an
// hour and three history rows, whose ids reached 10 before gc pruned some.
const char* const k_version_1_rows = R"(
PRAGMA user_version = 1;
UPDATE counters SET value = 5 WHERE name = 'token';
INSERT INTO leases VALUES ('', 'x', '11111111-2222-4333-8444-555555555555', 'exclusive', 0, 5, 1,
  'r1', CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER),
  CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER),
  CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) + 3600000,
  'oldhost', '127.0.0.1', 42, 'someone', 'job', 0);
INSERT INTO history (id, at, event, namespace, resource, owner, mode, token, held_ms, host, ip,
  pid, user, command) VALUES
  (8, 1, 'acquired', '', 'w', '11111111-2222-4333-8444-555555555555', 'shared', 3, NULL,
   'oldhost', '127.0.0.1', 42, 'someone', 'job'),
  (9, 2, 'released', '', 'w', '11111111-2222-4333-8444-555555555555', 'shared', 3, 1,
   'oldhost', '127.0.0.1', 42, 'someone', 'job'),
  (10, 3, 'acquired', '', 'x', '11111111-2222-4333-8444-555555555555', 'exclusive', 5, NULL,
   'oldhost', '127.0.0.1', 42, 'someone', 'job');
)";

// History rows of a version 3 database: x acquired twice, skipped and timed
// out once, released once; y forced once, expired once.
const char* const k_version_3_history = R"(
INSERT INTO history (at, event, namespace, resource, owner, mode, token) VALUES
  (1, 'acquired', '', 'x', '11111111-2222-4333-8444-555555555555', 'exclusive', 1),
  (2, 'released', '', 'x', '11111111-2222-4333-8444-555555555555', 'exclusive', 1),
  (3, 'acquired', '', 'x', '11111111-2222-4333-8444-555555555555', 'exclusive', 2),
  (4, 'skipped', '', 'x', '11111111-2222-4333-8444-666666666666', 'exclusive', NULL),
  (5, 'timed_out', '', 'x', '11111111-2222-4333-8444-666666666666', 'exclusive', NULL),
  (6, 'forced', 'dc-eu1', 'y', '11111111-2222-4333-8444-555555555555', 'exclusive', 3),
  (7, 'expired', 'dc-eu1', 'y', '11111111-2222-4333-8444-555555555555', 'exclusive', 4);
)";

// A lease of a version 4 database, live for an hour: no secret hash then.
const char* const k_version_4_lease = R"(
UPDATE counters SET value = 7 WHERE name = 'token';
INSERT INTO leases VALUES ('', 'old.job', '11111111-2222-4333-8444-777777777777', 'exclusive', 0,
  7, 1, 'r1', CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER),
  CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER),
  CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) + 3600000,
  'oldhost', '127.0.0.1', 42, 'someone', 'job', 0);
INSERT INTO history (at, event, namespace, resource, owner, mode, token) VALUES
  (1, 'acquired', '', 'old.job', '11111111-2222-4333-8444-777777777777', 'exclusive', 7);
)";

// Version 6: a live lease whose owner proved itself with a secret (its hash
// kept, of 00112233445566778899aabbccddeeff) and, behind it, a live queue
// entry, which kept no hash then.
const char* const k_version_6_queue = R"(
INSERT INTO leases VALUES ('', 'q', '11111111-2222-4333-8444-666666666666', 'exclusive', 0, 9, 1,
  'r6', CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER),
  CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER),
  CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) + 3600000,
  'oldhost', '127.0.0.1', 42, 'someone', 'job', 0,
  '5947d7c33d783f94b3b4c1a96ebc8991ed28f1b069b71e03376cba8caa98a720');
INSERT INTO waiters (namespace, resource, owner, mode, slots, request_id, enqueued_at, expires_at,
  host, ip, pid, user, command, owner_started_at) VALUES
  ('', 'q', '11111111-2222-4333-8444-888888888888', 'exclusive', 0, 'w6',
   CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER),
   CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) + 3600000,
   'oldhost', '127.0.0.1', 43, 'someone', 'waiting job', 0);
UPDATE counters SET value = 9 WHERE name = 'token';
)";

}  // namespace

TEST_SUITE("sqlite migrations") {
  TEST_CASE(
      "the success log takes a start it has already (two shared runs granted in one "
      "millisecond both succeed)" *
      only_on("sqlite")) {
    TestEnv env;
    fs::path db = database_file(env);
    REQUIRE_EXIT(env.clock({"init"}), 0);
    // k_record_success (src/store/sqlite/sqlite_store.hpp) as each release
    // of the two sends it: the second fired the log's trigger with ABORT.
    const std::string record =
        "INSERT INTO last_success (namespace, resource, started_at, owner, host, token)"
        " VALUES ('', 'r', 1700000000000, 'o', 'h', 1)"
        " ON CONFLICT (namespace, resource) DO UPDATE SET started_at = excluded.started_at,"
        " owner = excluded.owner, host = excluded.host, token = excluded.token"
        " WHERE excluded.started_at >= last_success.started_at;";
    Result twice = env.shell(
        "sqlite3 \"$DB\" \"$SQL\" && sqlite3 \"$DB\" \"$SQL\" &&"
        " sqlite3 \"$DB\" 'SELECT COUNT(*) FROM successes'",
        {{"DB", db.string()}, {"SQL", record}});
    CHECK_EXIT(twice, 0);
    CHECK(twice.out == "1\n");
  }

  TEST_CASE(
      "a version 6 database upgrades with its live lease and queue entry: the lease's "
      "secret still proves it, the queue entry keeps its place" *
      only_on("sqlite")) {
    TestEnv env;
    fs::path db = database_file(env);
    std::string migrations = std::string(CLOCK_TEST_SQL_DIR) + "/sqlite/migrations/";
    REQUIRE_EXIT(env.shell("cat \"$M\"00[1-6]_*.sql | sqlite3 \"$DB\""
                           " && sqlite3 \"$DB\" 'PRAGMA user_version = 6' \"$ROWS\"",
                           {{"DB", db.string()}, {"M", migrations}, {"ROWS", k_version_6_queue}}),
                 0);
    const std::string holder = "11111111-2222-4333-8444-666666666666";
    const std::string waiter = "11111111-2222-4333-8444-888888888888";
    auto status = env.status();  // the first use migrates
    REQUIRE(status["holders"].size() == 1);
    REQUIRE(status["waiters"].size() == 1);
    CHECK(status["waiters"][0]["owner"] == waiter);
    // The holder's id is bound to its secret, on every act in its name.
    const std::string proven = holder + ".00112233445566778899aabbccddeeff";
    const std::string forged = holder + ".ffffffffffffffffffffffffffffffff";
    CHECK_EXIT(env.clock({"renew", "-r", "q", "--owner", forged}), 77);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "other", "--owner", forged}), 77);
    CHECK_EXIT(env.clock({"renew", "-r", "q", "--owner", proven}), 0);
    // A newcomer stays behind the queue entry; once the holder is done, the
    // entry's owner is granted in its place (it kept no hash: its id alone).
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "q"}), 75);
    CHECK_EXIT(env.clock({"release", "-r", "q", "--owner", proven}), 0);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "q"}), 75);
    Result granted = env.clock({"acquire", "-n", "-r", "q", "--format", "json", "--owner",
                                waiter + ".0123456789abcdef0123456789abcdef"});
    REQUIRE_EXIT(granted, 0);
    CHECK(nlohmann::json::parse(granted.out)["token"] == 10);
    CHECK(env.status()["waiters"].empty());
  }

  TEST_CASE("a live lease from before owner secrets is renewed and released by its id alone" *
            only_on("sqlite")) {
    TestEnv env;
    fs::path db = database_file(env);
    std::string migrations = std::string(CLOCK_TEST_SQL_DIR) + "/sqlite/migrations/";
    REQUIRE_EXIT(env.shell("cat \"$M\"00[1-4]_*.sql | sqlite3 \"$DB\""
                           " && sqlite3 \"$DB\" 'PRAGMA user_version = 4' \"$ROWS\"",
                           {{"DB", db.string()}, {"M", migrations}, {"ROWS", k_version_4_lease}}),
                 0);
    const std::string id = "11111111-2222-4333-8444-777777777777";
    auto holders = env.holders_of("old.job");  // the first use migrates
    REQUIRE(holders.size() == 1);
    CHECK(holders[0]["token"] == 7);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "old.job"}), 75);
    CHECK_EXIT(env.clock({"renew", "-r", "old.job", "--owner", id}), 0);
    CHECK_EXIT(env.clock({"release", "-r", "old.job", "--owner", id}), 0);
    CHECK(env.holders_of("old.job").empty());

    // A new lease keeps a hash, never the secret, and the history rebuild
    // kept the run counts' trigger.
    Acquired fresh = env.acquire({"-r", "old.job"});
    const std::string secret = secret_of(fresh.credential);
    Result stored = env.shell(
        "sqlite3 \"$DB\" 'SELECT secret_hash FROM leases'; "
        "sqlite3 \"$DB\" .dump",
        {{"DB", db.string()}});
    REQUIRE_EXIT(stored, 0);
    CHECK(std::regex_search(stored.out, std::regex("^[0-9a-f]{64}\n")));
    CHECK(stored.out.find(secret) == std::string::npos);
    CHECK_EXIT(env.clock({"release", "-r", "old.job", "--owner", fresh.owner}), 77);
    CHECK(runs_total(env.clock({"status", "--format", "prometheus"}).out)["/old.job/acquired"] ==
          2);
  }

  TEST_CASE("a version 1 database upgrades in place, keeping live leases, history and ids" *
            only_on("sqlite")) {
    TestEnv env;
    fs::path db = database_file(env);
    std::string schema = std::string(CLOCK_TEST_SQL_DIR) + "/sqlite/migrations/001_schema.sql";
    REQUIRE_EXIT(env.shell("sqlite3 \"$DB\" < \"$SCHEMA\" && sqlite3 \"$DB\" \"$ROWS\"",
                           {{"DB", db.string()}, {"SCHEMA", schema}, {"ROWS", k_version_1_rows}}),
                 0);

    // The lease is live and held after the upgrade.
    auto holders = env.holders_of("x");
    REQUIRE(holders.size() == 1);
    CHECK(holders[0]["token"] == 5);
    CHECK(holders[0]["owner"] == "11111111-2222-4333-8444-555555555555");
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x"}), 75);

    // History holds a new run after the old rows, with ids the old rows
    // never had.
    std::string runner = random_owner();
    CHECK_EXIT(env.clock({"run", "-r", "y", "--", "true"}, {{"CLOCK_OWNER", runner}}), 0);
    Result history = env.clock({"history", "--format", "json"});
    REQUIRE_EXIT(history, 0);
    auto events = nlohmann::json::parse(history.out)["events"];
    INFO(events.dump(2));
    REQUIRE(events.size() == 5);
    std::vector<long long> ids;
    int new_rows = 0;
    for (const auto& event : events) {
      ids.push_back(event["id"].get<long long>());
      if (event["owner"] == id_of(runner)) {
        ++new_rows;
        CHECK(event["id"].get<long long>() > 10);
      }
    }
    CHECK(new_rows == 2);

    Result schema_now = env.shell(
        "sqlite3 \"$DB\" 'PRAGMA user_version' \"SELECT name FROM sqlite_master WHERE "
        "tbl_name = 'history' AND type = 'index' ORDER BY name\"",
        {{"DB", db.string()}});
    REQUIRE_EXIT(schema_now, 0);
    CHECK(schema_now.out.find("history_by_resource\nhistory_by_time") != std::string::npos);
    CHECK(std::stoi(schema_now.out) >= 2);

    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", "11111111-2222-4333-8444-555555555555"}),
               0);
  }

  TEST_CASE("a version 3 database starts its run counts from the history it holds" *
            only_on("sqlite")) {
    TestEnv env;
    fs::path db = database_file(env);
    std::string migrations = std::string(CLOCK_TEST_SQL_DIR) + "/sqlite/migrations/";
    REQUIRE_EXIT(env.shell("cat \"$M\"001_*.sql \"$M\"002_*.sql \"$M\"003_*.sql | sqlite3 \"$DB\""
                           " && sqlite3 \"$DB\" 'PRAGMA user_version = 3' \"$ROWS\"",
                           {{"DB", db.string()}, {"M", migrations}, {"ROWS", k_version_3_history}}),
                 0);

    Result metrics = env.clock({"status", "--format", "prometheus"});
    REQUIRE_EXIT(metrics, 0);
    INFO(metrics.out);
    CHECK(runs_total(metrics.out) ==
          std::map<std::string, long long>{
              {"/x/acquired", 2}, {"/x/skipped", 1}, {"/x/timed_out", 1}, {"dc-eu1/y/forced", 1}});

    // And counting goes on from the seeded counts.
    CHECK_EXIT(env.clock({"run", "-r", "x", "--", "true"}), 0);
    CHECK(runs_total(env.clock({"status", "x", "--format", "prometheus"}).out)["/x/acquired"] == 3);
  }
}
