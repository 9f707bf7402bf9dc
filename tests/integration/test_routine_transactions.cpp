// One CALL of a MariaDB procedure is one transaction (sql/mariadb/procedures,
// "the caller's session as it was"): an error part-way through a release, a
// renewal, a forced release or a gc batch undoes what the call had already
// changed, and a call leaves the session's autocommit, isolation level and
// group_concat_max_len as it found them. MariaDB only: a procedure there
// manages its own transaction and session settings, where a PostgreSQL
// function runs inside the caller's statement, atomic by itself. The
// procedures are called as the server's root, with a test-only trigger that
// makes the history record of resource "boom" fail.
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "harness.hpp"
#include "mariadb_tools.hpp"

using namespace clk::test;

namespace {

// `sql` as root; its output, the test failing if the client does.
std::string query(const TestEnv& env, const std::string& sql) {
  Result result = maria::sql(env, sql);
  INFO(sql << "\n" << result.describe());
  REQUIRE(result.status == 0);
  return result.out;
}

// The suffix of this release's procedures (routine_sets).
std::string procedure_suffix(const TestEnv& env) {
  std::string out = query(env, "SELECT suffix FROM routine_sets WHERE suffix <> ''");
  return out.substr(0, out.find('\n'));
}

// What a call must leave unchanged when it fails: the leases on t.a and boom
// with their expiry, the number of history records and successes, and
// the hierarchy slots' write counters.
std::string record_of(const TestEnv& env) {
  return query(
      env,
      "SELECT (SELECT GROUP_CONCAT(resource, ':', token, ':', expires_us ORDER BY "
      "resource) FROM leases WHERE resource IN ('t.a', 'boom')), (SELECT COUNT(*) FROM history), "
      "(SELECT COUNT(*) FROM last_success), (SELECT SUM(writes) FROM hierarchy_locks)");
}

}  // namespace

TEST_SUITE("server routines") {
  TEST_CASE(
      "a MariaDB procedure that fails part-way changes nothing, and leaves the session's "
      "settings as they were" *
      only_on("mariadb")) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);
    const std::string s = procedure_suffix(env);
    REQUIRE_FALSE(s.empty());
    Acquired held = env.acquire({"-r", "t.a", "-r", "boom", "--ttl", "1h"});
    const std::string owner = held.owner;
    std::string ns = query(env, "SELECT namespace FROM leases WHERE resource = 't.a'");
    ns = "'" + ns.substr(0, ns.find('\n')) + "'";
    const std::string secret = secret_of(held.credential);
    // boom expired: a release, a renewal and gc write its 'expired' or
    // 'lost' record after changing t.a.
    query(env, "UPDATE leases SET expires_us = clock_now_us() - 1000 WHERE resource = 'boom'");
    query(env,
          "DELIMITER //\n"
          "CREATE TRIGGER test_boom BEFORE INSERT ON history FOR EACH ROW "
          "IF NEW.resource = 'boom' THEN "
          "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'boom'; END IF //\n"
          "DELIMITER ;");
    const std::string before = record_of(env);
    CAPTURE(before);
    REQUIRE(before.find("t.a:") != std::string::npos);
    REQUIRE(before.find("boom:") != std::string::npos);
    const std::string both = ns + ", '[\"t.a\", \"boom\"]'";
    const std::vector<std::string> calls = {
        "CALL clock_release" + s + "(" + both + ", '" + owner + "', '" + secret +
            "', 'x', 'h', '[]', TRUE)",
        "CALL clock_renew" + s + "(" + both + ", '" + owner + "', '[]', 5000, '" + secret +
            "', 'x')",
        "CALL clock_force_release" + s + "(" + both + ", 'ops')",
        "CALL clock_gc_batch" + s + "(10, NULL, FALSE, 0)"};
    for (const std::string& call : calls) {
      CAPTURE(call);
      Result failed = maria::sql(env, call);
      INFO(failed.describe());
      CHECK(failed.status != 0);
      CHECK(failed.err.find("boom") != std::string::npos);
      CHECK(record_of(env) == before);
    }
    query(env, "DROP TRIGGER test_boom");

    const std::string session =
        query(env,
              "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ; "
              "SET SESSION group_concat_max_len = 4096; "
              "CALL clock_renew" +
                  s + "(" + ns + ", '[\"t.a\"]', '" + owner + "', '[]', 5000, '" + secret +
                  "', 'x'); "
                  "SELECT CONCAT(@@autocommit + 0, ',', @@tx_isolation, ',', "
                  "@@group_concat_max_len)");
    CHECK(session.find("\"outcome\": \"renewed\"") != std::string::npos);
    CHECK(session.substr(session.rfind('\n', session.size() - 2) + 1) ==
          "1,REPEATABLE-READ,4096\n");
  }

  TEST_CASE(
      "history of 5,000 events on MariaDB is whole, past the session's "
      "group_concat_max_len, which stays as it was" *
      only_on("mariadb")) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);
    const std::string s = procedure_suffix(env);
    query(env,
          "INSERT INTO history (at_us, event, namespace, resource, owner, command) "
          "SELECT clock_now_us(), 'released', 'big', CONCAT('b.', seq), UUID(), "
          "REPEAT('x', 200) FROM seq_1_to_5000");
    const std::string out = query(env,
                                  "SET SESSION group_concat_max_len = 4096; "
                                  "CALL clock_history" +
                                      s +
                                      "('big', NULL, 6000, NULL); "
                                      "SELECT @@group_concat_max_len");
    const std::string reply = out.substr(0, out.find('\n'));
    const std::string setting = out.substr(out.rfind('\n', out.size() - 2) + 1);
    CHECK(setting == "4096\n");
    nlohmann::json events = nlohmann::json::parse(reply);
    CHECK(events.size() == 5000);
  }
}
