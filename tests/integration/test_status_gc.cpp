// clock status, history and gc (SPEC §3): what an operator sees about holders,
// and that collecting expired leases never resets fencing tokens.
#include <pwd.h>
#include <string>
#include <unistd.h>

#include <doctest/doctest.h>

#include "harness.hpp"

using namespace clk::test;

namespace {

std::string user_name() {
  passwd* entry = getpwuid(getuid());
  return entry ? entry->pw_name : "";
}

}  // namespace

TEST_SUITE("status and gc") {
  TEST_CASE("status --format json lists host, pid, token and expiry for a held lock") {
    TestEnv env;
    Result acquired = env.clock({"acquire", "--format", "json", "-r", "x", "--ttl", "60s"});
    REQUIRE_EXIT(acquired, 0);
    Acquired grant = parse_acquired(acquired.out);

    nlohmann::json status = env.status();
    INFO(status.dump(2));
    REQUIRE(status.contains("waiters"));
    CHECK(status["waiters"].is_array());
    CHECK(status["waiters"].empty());
    REQUIRE(status["holders"].size() == 1);
    const nlohmann::json& holder = status["holders"][0];
    CHECK(holder["resource"] == "x");
    CHECK(holder["namespace"] == "");
    CHECK(holder["owner"] == grant.owner);
    CHECK(holder["host"] == host_name());
    CHECK(holder["ip"].is_string());
    // The pid of `clock acquire` itself, or of the process that ran it.
    long long pid = holder["pid"].get<long long>();
    CHECK((pid == acquired.pid || pid == getpid()));
    CHECK(holder["user"] == user_name());
    CHECK(holder["command"].is_string());
    CHECK(holder["mode"] == "exclusive");
    CHECK(holder["token"] == grant.token());
    CHECK_FALSE(holder["acquired_at"].get<std::string>().empty());
    CHECK_FALSE(holder["expires_at"].get<std::string>().empty());
    CHECK(holder["held_for_ms"].get<long long>() >= 0);
    long long expires_in = holder["expires_in_ms"].get<long long>();
    CHECK(expires_in > 0);
    CHECK(expires_in <= 60'000);
  }

  TEST_CASE("status lists a waiter behind a holder") {
    TestEnv env;
    env.acquire({"-r", "x"});
    std::string waiter_owner = random_uuid();
    auto waiter = env.spawn(env.clock_command({"acquire", "-r", "x", "--owner", waiter_owner}));
    nlohmann::json status;
    REQUIRE(await(
        [&] {
          status = env.status();
          return !status["waiters"].empty();
        },
        30s));
    INFO(status.dump(2));
    CHECK(status["waiters"][0]["resource"] == "x");
    CHECK(status["waiters"][0]["owner"] == waiter_owner);
  }

  TEST_CASE("status PREFIX lists the resource and its descendants only") {
    TestEnv env;
    env.acquire({"-r", "foo.bar"});
    env.acquire({"-r", "foobar"});
    env.acquire({"-r", "other"});
    nlohmann::json status = env.status({"foo"});
    INFO(status.dump(2));
    REQUIRE(status["holders"].size() == 1);
    CHECK(status["holders"][0]["resource"] == "foo.bar");
  }

  TEST_CASE("status in table and prometheus formats succeeds and names the holder") {
    TestEnv env;
    env.acquire({"-r", "ldap.import"});
    Result table = env.clock({"status"});
    CHECK_EXIT(table, 0);
    CHECK(table.out.find("ldap.import") != std::string::npos);
    CHECK(table.out.find(host_name()) != std::string::npos);
    Result prometheus = env.clock({"status", "--format", "prometheus"});
    CHECK_EXIT(prometheus, 0);
    CHECK(prometheus.out.find("ldap.import") != std::string::npos);
  }

  TEST_CASE("gc removes expired leases but tokens keep growing") {
    TestEnv env;
    Acquired expiring = env.acquire({"-r", "x", "--ttl", "1s"});
    env.acquire({"-r", "y", "--ttl", "1h"});
    REQUIRE(await([&] { return env.holders_of("x").empty(); }, 30s, 100ms));
    CHECK(env.holders_of("x", true).size() == 1);  // expired, not yet collected

    CHECK_EXIT(env.clock({"gc", "--dry-run"}), 0);
    CHECK(env.holders_of("x", true).size() == 1);

    Result collected = env.clock({"gc"});
    CHECK_EXIT(collected, 0);
    CHECK(env.holders_of("x", true).empty());
    CHECK(env.holders_of("y").size() == 1);  // a live lease survives gc

    Acquired next = env.acquire({"-n", "-r", "x"});
    CHECK(next.token() > expiring.token());
  }

  TEST_CASE("history records grants and releases") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "x"});
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", holder.owner}), 0);
    Result history = env.clock({"history", "x"});
    CHECK_EXIT(history, 0);
    CHECK(history.out.find("acquired") != std::string::npos);
    CHECK(history.out.find("released") != std::string::npos);

    Result json = env.clock({"history", "x", "--format", "json"});
    CHECK_EXIT(json, 0);
    CHECK(nlohmann::json::accept(json.out));
    CHECK(json.out.find(holder.owner) != std::string::npos);
  }

  TEST_CASE("clock init creates the schema and --print-sql prints the DDL") {
    TestEnv env;
    CHECK_EXIT(env.clock({"init"}), 0);
    CHECK_EXIT(env.clock({"init"}), 0);  // a second run has nothing to migrate
    Result sql = env.clock({"init", "--print-sql"});
    CHECK_EXIT(sql, 0);
    CHECK(sql.out.find("CREATE") != std::string::npos);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x"}), 0);
  }
}
