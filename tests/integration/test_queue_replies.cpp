// A queued request's attempts on a server: its re-attempts (fast path 0,
// 24_fast_paths.sql in both dialects) and, in a herd, its first attempt
// (fast path 3 on PostgreSQL, clock_acq_queue_behind on MariaDB) are answered
// blocked with the first queue entry ahead, how many entries are ahead and
// the caller's own position, not the whole queue, so that each costs a few
// statements however long the queue. Raw calls of this
// release's try_acquire as the server's superuser, on PostgreSQL and MariaDB.
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "harness.hpp"
#include "mariadb_tools.hpp"
#include "postgres_tools.hpp"
#include "server_tools.hpp"

using namespace clk::test;
using nlohmann::json;

namespace {

// The first line of a client's output.
std::string first_line(const Result& result) {
  INFO(result.describe());
  REQUIRE(result.status == 0);
  return result.out.substr(0, result.out.find('\n'));
}

// One attempt by `owner` at q.x, exclusive, queued, 60 s TTL, request id
// `request`, empty secret: try_acquire's JSON reply.
json try_acquire(const TestEnv& env, const std::string& owner, const std::string& request) {
  if (backend_name() == "postgres") {
    std::string set =
        first_line(pg::psql(env, "SELECT name FROM clock.routine_sets WHERE name <> 'clock'"));
    return json::parse(
        first_line(pg::psql(env, "SELECT " + set + ".try_acquire('', '{q.x}', 'exclusive', 0, '" +
                                     owner + "', 60000, '" + request +
                                     "', true, 'h', '', 1, 'u', 'c', NULL, false, '', 'test')")));
  }
  std::string suffix =
      first_line(maria::sql(env, "SELECT suffix FROM routine_sets WHERE suffix <> '' LIMIT 1"));
  return json::parse(first_line(maria::sql(
      env, "CALL clock_try_acquire" + suffix + "('', '[\"q.x\"]', 'exclusive', 0, '" + owner +
               "', 60000, '" + request +
               "', true, 'h', '', 1, 'u', 'c', NULL, false, '', 'test', NULL, NULL, 0)")));
}

std::string owner_id(int n) {
  return "00000000-0000-4000-8000-00000000000" + std::to_string(n);
}

}  // namespace

TEST_SUITE("queue replies") {
  TEST_CASE(
      "a queued request's attempts name the first entry ahead, how many are ahead and their "
      "own place" *
      server::only_on_servers()) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);
    REQUIRE(try_acquire(env, owner_id(1), "held")["outcome"] == "granted");
    for (int n = 2; n <= 4; ++n) {
      json first = try_acquire(env, owner_id(n), "wait-" + std::to_string(n));
      INFO(first.dump());
      REQUIRE(first["outcome"] == "blocked");
    }

    json again = try_acquire(env, owner_id(4), "wait-4");
    INFO(again.dump());
    CHECK(again["outcome"] == "blocked");
    REQUIRE(again["leases"].size() == 1);
    CHECK(again["leases"][0]["owner"] == owner_id(1));
    CHECK(again["ahead"] == 2);
    REQUIRE(again["waiters"].size() == 1);
    CHECK(again["waiters"][0]["owner"] == owner_id(2));
    REQUIRE(again["mine"].is_number_integer());
    CHECK(again["mine"].get<long long>() > again["waiters"][0]["position"].get<long long>());

    // A newcomer's first attempt: queued behind the three, told the same way.
    json newcomer = try_acquire(env, owner_id(5), "wait-5");
    INFO(newcomer.dump());
    CHECK(newcomer["outcome"] == "blocked");
    CHECK(newcomer["ahead"] == 3);
    REQUIRE(newcomer["waiters"].size() == 1);
    CHECK(newcomer["waiters"][0]["owner"] == owner_id(2));
    REQUIRE(newcomer["mine"].is_number_integer());
    CHECK(newcomer["mine"].get<long long>() > again["mine"].get<long long>());

    // The first in the queue has nobody ahead: only the lease is in its way.
    json front = try_acquire(env, owner_id(2), "wait-2");
    INFO(front.dump());
    CHECK(front["outcome"] == "blocked");
    CHECK(front["ahead"] == 0);
    CHECK(front["waiters"].empty());
  }
}
