// What a server's routines guarantee to any caller, clock or not: one
// transaction per call, a retried request id answered with its grant, an
// owner's proof, the names and modes refused, with the same messages on
// PostgreSQL and MariaDB. Raw calls of this release's try_acquire (its
// routine set) as the server's superuser, through psql or the mariadb
// client; what a failure leaves behind is read through clock itself.
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

bool on_postgres() {
  return backend_name() == "postgres";
}

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
  if (on_postgres()) {
    std::string set = server::sql_value(
        env, {.postgres = "SELECT name FROM clock.routine_sets WHERE name <> 'clock'"});
    return {.postgres = "SELECT " + set + ".try_acquire('', '{" + array + "}', '" + attempt.mode +
                        "', 0, '" + attempt.owner + tail + ")"};
  }
  std::string suffix = server::sql_value(
      env, {.mariadb = "SELECT suffix FROM routine_sets WHERE suffix <> '' LIMIT 1"});
  return {.mariadb = "CALL clock_try_acquire" + suffix + "('', '[" + list + "]', '" + attempt.mode +
                     "', 0, '" + attempt.owner + tail + ", NULL, 0)"};
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

    Result failed = server::sql(env, try_acquire_call(env, {{"t1", "boom"}, k_owner, "r", "s-1"}));
    INFO(failed.describe());
    CHECK(failed.status != 0);
    CHECK(failed.err.find("boom") != std::string::npos);
    CHECK(env.holders_of("t1").empty());
    CHECK(rows_of(env, "leases") == 0);
    CHECK(rows_of(env, "history") == history);
    CHECK(rows_of(env, "run_counts") == counts);

    // Through clock: the same, and clock says what failed.
    Result through_clock = env.clock({"acquire", "-n", "-r", "t1", "-r", "boom"});
    INFO(through_clock.describe());
    CHECK(through_clock.status != 0);
    CHECK(env.holders_of("t1").empty());
    CHECK(rows_of(env, "history") == history);
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
}
