// What a server's routines guarantee to any caller, clock or not: one
// transaction per call, a retried request id answered with its grant, an
// owner's proof, the names and modes refused, with the same messages on
// PostgreSQL and MariaDB. Raw calls of this release's try_acquire (its
// routine set) as the server's superuser, through psql or the mariadb
// client; what a failure leaves behind is read through clock itself.
#include <memory>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "harness.hpp"
#include "mariadb_tools.hpp"
#include "server_tools.hpp"

using namespace clk::test;
using nlohmann::json;

namespace {

// One attempt at try_acquire; the defaults are a queued exclusive request
// of `resources` by `owner`, its secret `secret`.
struct Attempt {
  std::vector<std::string> resources;
  std::string owner;
  std::string request;
  std::string secret;
  std::string mode = "exclusive";
};

// The CALL (MariaDB) or SELECT (PostgreSQL) of this release's try_acquire
// for `attempt`, in the server's dialect.
server::Dialects try_acquire_call(const TestEnv& env, const Attempt& attempt) {
  std::string array, list;
  for (const auto& resource : attempt.resources) {
    array += (array.empty() ? "" : ",") + resource;
    list += std::string(list.empty() ? "" : ", ") + "\"" + resource + "\"";
  }
  const std::string tail = "', 60000, '" + attempt.request +
                           "', true, 'h', '', 1, 'u', 'c', NULL, true, '" + attempt.secret +
                           "', 'asker'";
  const std::string set = server::routine_set(env);
  if (server::on_postgres()) {
    return {.postgres = "SELECT " + set + ".try_acquire('', '{" + array + "}', '" + attempt.mode +
                        "', 0, '" + attempt.owner + tail + ")"};
  }
  return {.mariadb = "CALL clock_try_acquire" + set + "('', '[" + list + "]', '" + attempt.mode +
                     "', 0, '" + attempt.owner + tail + ", NULL, NULL, 0)"};
}

// try_acquire's JSON reply to `attempt`.
json try_acquire(const TestEnv& env, const Attempt& attempt) {
  json reply = json::parse(server::sql_value(env, try_acquire_call(env, attempt)));
  INFO(reply.dump());
  return reply;
}

const std::string k_owner = "11111111-1111-4111-8111-111111111111";
const std::string k_other = "22222222-2222-4222-8222-222222222222";

// How many rows `table` has (leases, history, run_counts).
long long rows_of(const TestEnv& env, const std::string& table) {
  return std::stoll(server::sql_value(env, {.postgres = "SELECT count(*) FROM clock." + table,
                                            .mariadb = "SELECT COUNT(*) FROM " + table}));
}

// A test-only routine `test_worker(k, rounds)` of the test's database: in
// each round, owner k asks for two resources of hierarchies c and d, in one
// of four orders, and attempts again (its request id kept, so it keeps its
// place) until granted, as clock does; while holding it notes any lease of
// another owner in test_violations (every two of the four requests
// conflict), then releases. A request not granted within 5,000 attempts
// fails the worker, so that a broken model ends the test, not ctest.
server::Dialects worker_routine(const std::string& set) {
  return {.postgres =
              "CREATE TABLE public.test_violations (k int, i int, n int); "
              "CREATE PROCEDURE public.test_worker(k int, rounds int) LANGUAGE plpgsql AS "
              "$$ DECLARE "
              "  v_owner uuid := (lpad(k::text, 8, '0') || '-0000-4000-8000-' || "
              "                   lpad(k::text, 12, '0'))::uuid; "
              "  v_res text[]; v_got int; v_others int; v_tries int; "
              "BEGIN "
              "  FOR i IN 0 .. rounds - 1 LOOP "
              "    v_res := CASE (i + k) % 4 WHEN 0 THEN '{c.x,d}'::text[] "
              "      WHEN 1 THEN '{d.y,c}' WHEN 2 THEN '{c,d.y.z}' ELSE '{d,c.x}' END; "
              "    v_got := 0; v_tries := 0; "
              "    WHILE v_got < 2 LOOP "
              "      v_tries := v_tries + 1; "
              "      IF v_tries > 5000 THEN "
              "        RAISE EXCEPTION 'a queued request was never granted'; "
              "      END IF; "
              "      PERFORM " +
              set +
              ".try_acquire('qq', v_res, 'exclusive', 0, v_owner, 5000, "
              "        'w' || k || '-' || i, true, 'h' || k, '', k, '', '', NULL, "
              "        false, 's' || k, ''); "
              "      COMMIT; "
              "      SELECT count(*) INTO v_got FROM clock.leases "
              "        WHERE namespace = 'qq' AND owner = v_owner; "
              "      IF v_got < 2 THEN PERFORM pg_sleep(0.002); END IF; "
              "    END LOOP; "
              "    SELECT count(*) INTO v_others FROM clock.leases "
              "      WHERE namespace = 'qq' AND owner <> v_owner; "
              "    IF v_others > 0 THEN "
              "      INSERT INTO public.test_violations VALUES (k, i, v_others); "
              "    END IF; "
              "    PERFORM " +
              set +
              ".release('qq', v_res, v_owner, 's' || k, '', 'h' || k, '{}', false); "
              "    COMMIT; "
              "  END LOOP; "
              "END $$",
          .mariadb =
              "CREATE TABLE test_violations (k INT, i INT, n INT);\n"
              "DELIMITER //\n"
              "CREATE PROCEDURE test_worker(IN k INT, IN rounds INT)\n"
              "BEGIN\n"
              "  DECLARE i INT DEFAULT 0;\n"
              "  DECLARE v_owner CHAR(36) DEFAULT CONCAT(LPAD(k, 8, '0'), "
              "'-0000-4000-8000-', LPAD(k, 12, '0'));\n"
              "  DECLARE v_res LONGTEXT;\n"
              "  DECLARE v_got, v_others, v_tries INT;\n"
              "  WHILE i < rounds DO\n"
              "    SET v_res = ELT(1 + (i + k) % 4, '[\"c.x\", \"d\"]', "
              "'[\"d.y\", \"c\"]', '[\"c\", \"d.y.z\"]', '[\"d\", \"c.x\"]');\n"
              "    SET v_got = 0, v_tries = 0;\n"
              "    WHILE v_got < 2 DO\n"
              "      SET v_tries = v_tries + 1;\n"
              "      IF v_tries > 5000 THEN\n"
              "        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = "
              "'a queued request was never granted';\n"
              "      END IF;\n"
              "      CALL clock_try_acquire" +
              set +
              "('qq', v_res, 'exclusive', 0, v_owner, 5000, CONCAT('w', k, '-', i), "
              "TRUE, CONCAT('h', k), '', k, '', '', NULL, FALSE, CONCAT('s', k), '', NULL, "
              "NULL, 0);\n"
              "      SELECT COUNT(*) INTO v_got FROM leases "
              "WHERE namespace = 'qq' AND owner = v_owner;\n"
              "      IF v_got < 2 THEN DO SLEEP(0.002); END IF;\n"
              "    END WHILE;\n"
              "    SELECT COUNT(*) INTO v_others FROM leases "
              "WHERE namespace = 'qq' AND owner <> v_owner;\n"
              "    IF v_others > 0 THEN INSERT INTO test_violations VALUES (k, i, v_others); "
              "END IF;\n"
              "    CALL clock_release" +
              set +
              "('qq', v_res, v_owner, CONCAT('s', k), '', CONCAT('h', k), '[]', FALSE);\n"
              "    SET i = i + 1;\n"
              "  END WHILE;\n"
              "END//\n"};
}

}  // namespace

TEST_SUITE("routine calls") {
  TEST_CASE(
      "a retried request id is answered with its grant, not a second re-entry; a re-entry "
      "keeps the token" *
      server::only_on_servers()) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);
    json first = try_acquire(env, {{"a"}, k_owner, "first", "s-1"});
    REQUIRE(first["outcome"] == "granted");
    CHECK(first["grants"][0]["depth"] == 1);
    json reentry = try_acquire(env, {{"a"}, k_owner, "re-1", "s-1"});
    REQUIRE(reentry["outcome"] == "granted");
    CHECK(reentry["grants"][0]["depth"] == 2);
    CHECK(reentry["grants"][0]["token"] == first["grants"][0]["token"]);
    // The reply to re-1 was lost, say: the caller sends it again.
    json retried = try_acquire(env, {{"a"}, k_owner, "re-1", "s-1"});
    CHECK(retried["outcome"] == "granted");
    CHECK(retried["grants"][0]["depth"] == 2);
    auto holders = env.holders_of("a");
    REQUIRE(holders.size() == 1);
    CHECK(holders[0]["depth"] == 2);
    CHECK(holders[0]["token"] == first["grants"][0]["token"]);

    // Its id with another secret, or none, is refused and changes nothing.
    for (const std::string secret : {"wrong", ""}) {
      CAPTURE(secret);
      json refused = try_acquire(env, {{"a"}, k_owner, "re-2", secret});
      CHECK(refused["outcome"] == "not_proven");
    }
    CHECK(env.holders_of("a").at(0)["depth"] == 2);
    // And another owner is told who holds it.
    json blocked = try_acquire(env, {{"a.b"}, k_other, "other", "s-2"});
    CHECK(blocked["outcome"] == "blocked");
    CHECK(blocked["leases"][0]["owner"] == k_owner);
  }

  // Fast path 1 grants a request of one resource that nothing related
  // stands in the way of in a few statements; two resources always take the
  // general path. Their rows must not tell them apart.
  TEST_CASE("a grant that nothing stands in the way of writes what the general path writes" *
            server::only_on_servers()) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);
    json fast = try_acquire(env, {{"fa"}, k_owner, "r-fa", "s-1"});
    json general = try_acquire(env, {{"fb", "fc"}, k_owner, "r-fb", "s-1"});
    REQUIRE(fast["outcome"] == "granted");
    REQUIRE(general["outcome"] == "granted");
    REQUIRE(fast["grants"].size() == 1);
    CHECK(fast["grants"][0]["resource"] == "fa");
    CHECK(fast["grants"][0]["depth"] == 1);
    CHECK(general["grants"][0]["token"].get<long long>() >
          fast["grants"][0]["token"].get<long long>());
    CHECK(env.holders_of("fa").at(0)["token"] == fast["grants"][0]["token"]);

    // Rows of fa and of fb, all but what names them (resource, token,
    // request id, instants), the same: "1/2", one distinct value of two rows.
    auto distinct_of_two = [&](const std::string& table, const std::string& postgres,
                               const std::string& mariadb) {
      const std::string rows = table + " t WHERE resource IN ('fa', 'fb')";
      return server::sql_value(env, {.postgres = "SELECT count(DISTINCT " + postgres +
                                                 ") || '/' || count(*) FROM clock." + rows,
                                     .mariadb = "SELECT CONCAT(COUNT(DISTINCT CONCAT_WS('|', " +
                                                mariadb + ")), '/', COUNT(*)) FROM " + rows});
    };
    CHECK(distinct_of_two(
              "leases",
              "to_jsonb(t) - '{resource,token,request_id,acquired_at,renewed_at,expires_at}'"
              "::text[]",
              "namespace, owner, mode, slots, depth, expires_us - acquired_us, ttl_us, host, ip, "
              "pid, user_name, command, COALESCE(owner_started_us, '-'), "
              "COALESCE(secret_hash, '-'), db_user") == "1/2");
    CHECK(distinct_of_two("history", "to_jsonb(t) - '{id,at,resource,token}'::text[]",
                          "event, namespace, owner, mode, COALESCE(held_for_us, '-'), host, ip, "
                          "pid, user_name, command, forced_by, db_user, "
                          "COALESCE(secret_hash, '-'), COALESCE(leftovers, '-'), "
                          "COALESCE(exit_code, '-')") == "1/2");
    CHECK(distinct_of_two("run_counts", "outcome || ':' || count", "outcome, count") == "1/2");

    // An owner's own queue entry goes with the grant; another owner's entry
    // on a descendant is in the way (its turn comes first).
    REQUIRE(try_acquire(env, {{"fd"}, k_other, "r-other", "s-2"})["outcome"] == "granted");
    REQUIRE(try_acquire(env, {{"fd"}, k_owner, "r-fd", "s-1"})["outcome"] == "blocked");
    CHECK(rows_of(env, "waiters") == 1);
    const std::string no_leftovers = server::on_postgres() ? "'{}'" : "'[]'";
    auto other_releases = [&](const std::string& resource) {
      return server::sql(env, server::call(env, "release",
                                           "'', " + server::array_of({resource}) + ", '" + k_other +
                                               "', 's-2', '', 'h', " + no_leftovers + ", false"));
    };
    REQUIRE_EXIT(other_releases("fd"), 0);
    CHECK(try_acquire(env, {{"fd"}, k_owner, "r-fd", "s-1"})["outcome"] == "granted");
    CHECK(rows_of(env, "waiters") == 0);
    REQUIRE(try_acquire(env, {{"fe"}, k_other, "r-other-e", "s-2"})["outcome"] == "granted");
    REQUIRE(try_acquire(env, {{"fe.x"}, k_owner, "r-fe", "s-1"})["outcome"] == "blocked");
    REQUIRE_EXIT(other_releases("fe"), 0);
    json third = try_acquire(env, {{"fe"}, "33333333-3333-4333-8333-333333333333", "r-3", "s-3"});
    CHECK(third["outcome"] == "blocked");
    CHECK(third["waiters"][0]["owner"] == k_owner);
  }

  TEST_CASE("a grant that fails part-way leaves no lease, history or count behind" *
            server::only_on_servers()) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"run", "-r", "before", "--", "true"}), 0);
    // A trigger that fails the history row of `boom`: written after t1's.
    REQUIRE_EXIT(
        server::sql(
            env,
            {.postgres = "CREATE FUNCTION public.test_boom() RETURNS trigger LANGUAGE plpgsql AS "
                         "$$BEGIN IF NEW.resource = 'boom' THEN RAISE EXCEPTION 'boom'; END IF; "
                         "RETURN NEW; END$$; CREATE TRIGGER test_boom BEFORE INSERT ON "
                         "clock.history FOR EACH ROW EXECUTE FUNCTION public.test_boom()",
             .mariadb = "DELIMITER //\nCREATE TRIGGER test_boom BEFORE INSERT ON history FOR "
                        "EACH ROW IF NEW.resource = 'boom' THEN SIGNAL SQLSTATE '45000' SET "
                        "MESSAGE_TEXT = 'boom'; END IF//"}),
        0);
    const long long history = rows_of(env, "history");
    const long long counts = rows_of(env, "run_counts");
    REQUIRE(history > 0);
    // MariaDB's tokens are a row, rolled back with the rest; PostgreSQL's
    // are a sequence, which no rollback takes back (nor needs to).
    const std::string last_token = "SELECT last FROM tokens";
    const std::string token =
        server::on_postgres() ? "" : server::sql_value(env, {.mariadb = last_token});

    Result failed = server::sql(env, try_acquire_call(env, {{"t1", "boom"}, k_owner, "r", "s-1"}));
    INFO(failed.describe());
    CHECK(failed.status != 0);
    CHECK(failed.err.find("boom") != std::string::npos);
    CHECK(env.holders_of("t1").empty());
    CHECK(rows_of(env, "leases") == 0);
    CHECK(rows_of(env, "history") == history);
    CHECK(rows_of(env, "run_counts") == counts);
    if (!server::on_postgres())
      CHECK(server::sql_value(env, {.mariadb = last_token}) == token);

    // Through clock: the same, and clock says what failed.
    Result through_clock = env.clock({"acquire", "-n", "-r", "t1", "-r", "boom"});
    INFO(through_clock.describe());
    CHECK(through_clock.status != 0);
    CHECK(env.holders_of("t1").empty());
    CHECK(rows_of(env, "history") == history);
  }

  // A release and the run's exit it records are one transaction: a
  // retryable failure after the lease is gone (here a deadlock error raised
  // once by a trigger on run_results, which only the exit's record writes)
  // undoes both, and clock's retry releases the lease it still holds. When
  // MariaDB's release committed before the exit's record, the retry found
  // the lease gone and clock reported a run that had been protected as
  // unprotected (exit 79).
  TEST_CASE("a release that fails after its lease is gone is retried whole, not reported lost" *
            server::only_on_servers()) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);
    // Something that survives a rollback fails the first attempt only: a
    // sequence on PostgreSQL, a non-transactional (Aria) table on MariaDB.
    REQUIRE_EXIT(
        server::sql(
            env,
            {.postgres =
                 "CREATE SEQUENCE public.test_once; "
                 "CREATE FUNCTION public.test_fail_once() RETURNS trigger LANGUAGE plpgsql AS "
                 "$$BEGIN IF nextval('public.test_once') = 1 THEN RAISE EXCEPTION 'injected' "
                 "USING ERRCODE = 'deadlock_detected'; END IF; RETURN NEW; END$$; "
                 "CREATE TRIGGER test_fail_once BEFORE INSERT ON clock.run_results FOR EACH ROW "
                 "EXECUTE FUNCTION public.test_fail_once()",
             .mariadb = "CREATE TABLE test_once (n INT) ENGINE=Aria; "
                        "INSERT INTO test_once VALUES (1);\nDELIMITER //\n"
                        "CREATE TRIGGER test_fail_once BEFORE INSERT ON run_results FOR EACH ROW "
                        "BEGIN DELETE FROM test_once; IF ROW_COUNT() > 0 THEN SIGNAL SQLSTATE "
                        "'40001' SET MYSQL_ERRNO = 1213, MESSAGE_TEXT = 'injected'; END IF; "
                        "END//"}),
        0);
    Result run = env.clock({"run", "-r", "job", "--", "true"});
    CHECK_EXIT(run, 0);
    CHECK(run.err.find("unprotected") == std::string::npos);
    CHECK(env.holders_of("job").empty());
    // The failure was injected, and the exit recorded once.
    CHECK(server::sql_value(env, {.postgres = "SELECT last_value FROM public.test_once",
                                  .mariadb = "SELECT COUNT(*) FROM test_once"}) ==
          (server::on_postgres() ? "2" : "0"));
    CHECK(server::sql_value(
              env, {.postgres = "SELECT count(*) || ':' || min(exit_code) FROM clock.history "
                                "WHERE resource = 'job' AND event = 'released'",
                    .mariadb = "SELECT CONCAT(COUNT(*), ':', MIN(exit_code)) FROM history "
                               "WHERE resource = 'job' AND event = 'released'"}) == "1:0");
    CHECK(server::sql_value(env, {.postgres = "SELECT succeeded FROM clock.run_results "
                                              "WHERE resource = 'job'",
                                  .mariadb = "SELECT succeeded FROM run_results "
                                             "WHERE resource = 'job'"}) == "1");
  }

  TEST_CASE("bad names and modes are refused with the same message on both servers" *
            server::only_on_servers()) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);
    Result name = server::sql(env, try_acquire_call(env, {{"a..b"}, k_owner, "r", "s-1"}));
    INFO(name.describe());
    CHECK(name.status != 0);
    CHECK(name.err.find("invalid resource name") != std::string::npos);
    Result mode = server::sql(env, try_acquire_call(env, {{"a"}, k_owner, "r", "s-1", "both"}));
    INFO(mode.describe());
    CHECK(mode.status != 0);
    CHECK(mode.err.find("try_acquire: invalid mode, slots, ttl, owner or request id") !=
          std::string::npos);
    CHECK(rows_of(env, "leases") == 0);
  }

  // MariaDB's procedures open and commit their own transaction; the
  // session's autocommit is the caller's again afterwards.
  TEST_CASE("a call leaves the session's autocommit as it was" * only_on("mariadb")) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);
    Result result =
        maria::sql(env, try_acquire_call(env, {{"z"}, k_owner, "r", "s-1", "shared"}).mariadb +
                            "; SELECT @@autocommit");
    INFO(result.describe());
    REQUIRE(result.status == 0);
    CHECK(result.out.ends_with("\n1\n"));
  }

  // The server takes a request's slot rows in its own order, whatever the
  // caller's (clock sorts its resources; another caller need not): queued
  // requests for two hierarchies in either order deadlock neither the
  // server (no 40P01, 1213 or 1205) nor the model (a waiter holds nothing).
  TEST_CASE(
      "queued requests for two hierarchies in either order are granted in turn, never together "
      "and without a server deadlock" *
      server::only_on_servers() * doctest::timeout(300)) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);
    REQUIRE_EXIT(server::sql(env, worker_routine(server::routine_set(env))), 0);
    constexpr int k_workers = 4;
    constexpr int k_rounds = 10;
    std::vector<std::unique_ptr<Process>> workers;
    for (int k = 1; k <= k_workers; ++k) {
      const std::string call =
          "CALL test_worker(" + std::to_string(k) + ", " + std::to_string(k_rounds) + ")";
      workers.push_back(env.spawn(server::sql_command(env, {.postgres = call, .mariadb = call})));
    }
    for (auto& worker : workers) {
      Result result = worker->wait(240s);
      INFO(result.describe());
      CHECK(result.status == 0);
      CHECK(result.err.empty());
    }
    CHECK(rows_of(env, "leases") == 0);
    CHECK(std::stoll(server::sql_value(
              env, {.postgres = "SELECT count(*) FROM clock.history WHERE namespace = 'qq' AND "
                                "event = 'acquired'",
                    .mariadb = "SELECT COUNT(*) FROM history WHERE namespace = 'qq' AND "
                               "event = 'acquired'"})) == k_workers * k_rounds * 2);
    const std::string violations = "SELECT COUNT(*) FROM test_violations";
    CHECK(server::sql_value(env, {.postgres = violations, .mariadb = violations}) == "0");
  }
}
