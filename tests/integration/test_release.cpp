// clock release and renew (SPEC §3, §4: exit 77 for a lock this owner does not
// hold), and forced releases (SPEC §5: recorded, and the next token is larger).
#include <string>

#include <doctest/doctest.h>

#include "harness.hpp"

using namespace clk::test;

TEST_SUITE("release") {
  TEST_CASE("release by a wrong owner exits 77 and leaves the lock held") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "x"});
    Result refused = env.clock({"release", "-r", "x", "--owner", random_uuid()});
    CHECK_EXIT(refused, 77);
    CHECK(refused.err_lines().size() == 1);

    auto holders = env.holders_of("x");
    REQUIRE(holders.size() == 1);
    CHECK(holders[0]["owner"] == holder.owner);
    CHECK(holders[0]["token"] == holder.token());
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x"}), 75);

    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", holder.owner}), 0);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x"}), 0);
  }

  TEST_CASE("release takes the owner from CLOCK_OWNER") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "x"});
    CHECK_EXIT(env.clock({"release", "-r", "x"}, {{"CLOCK_OWNER", random_uuid()}}), 77);
    CHECK_EXIT(env.clock({"release", "-r", "x"}, {{"CLOCK_OWNER", holder.owner}}), 0);
    CHECK(env.holders_of("x").empty());
  }

  TEST_CASE("--owner beats CLOCK_OWNER") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "x"});
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", holder.owner},
                         {{"CLOCK_OWNER", random_uuid()}}),
               0);
  }

  TEST_CASE("releasing a lock twice exits 77 the second time") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "x"});
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", holder.owner}), 0);
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", holder.owner}), 77);
  }

  TEST_CASE("release of a lock never taken exits 77") {
    TestEnv env;
    CHECK_EXIT(env.clock({"release", "-r", "never.taken", "--owner", random_uuid()}), 77);
  }

  TEST_CASE("release --force frees another owner's lock and the next grant gets a larger token") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "x"});
    CHECK_EXIT(env.clock({"release", "-r", "x", "--force"}), 0);
    CHECK(env.holders_of("x").empty());
    Acquired next = env.acquire({"-n", "-r", "x"});
    CHECK(next.token() > holder.token());
    // The old holder's lease is gone: it is no longer the owner.
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", holder.owner}), 77);

    // History records who forced it.
    Result history = env.clock({"history", "x", "--format", "json"});
    REQUIRE_EXIT(history, 0);
    nlohmann::json events = nlohmann::json::parse(history.out).at("events");
    INFO(events.dump(2));
    int forced = 0;
    for (const auto& event : events) {
      if (event.value("event", "") != "forced")
        continue;
      ++forced;
      CHECK(event["owner"] == holder.owner);
      CHECK(event["token"] == holder.token());
      REQUIRE(event["by"].is_string());
      CHECK_FALSE(event["by"].get<std::string>().empty());
    }
    CHECK(forced == 1);
  }

  TEST_CASE("renew extends a held lease, keeping its token") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "x", "--ttl", "30s"});
    CHECK_EXIT(env.clock({"renew", "-r", "x", "--owner", holder.owner, "--ttl", "1h"}), 0);
    auto holders = env.holders_of("x");
    REQUIRE(holders.size() == 1);
    CHECK(holders[0]["token"] == holder.token());
    CHECK(holders[0]["expires_in_ms"].get<long long>() > 30'000);
  }

  TEST_CASE("renew by an owner that does not hold the lock exits 77") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "x"});
    CHECK_EXIT(env.clock({"renew", "-r", "x", "--owner", random_uuid()}), 77);
    CHECK_EXIT(env.clock({"renew", "-r", "y", "--owner", holder.owner}), 77);
  }

  TEST_CASE("renew of a lease that expired exits 77") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "x", "--ttl", "1s"});
    REQUIRE(await([&] { return env.holders_of("x").empty(); }, 30s, 100ms));
    CHECK_EXIT(env.clock({"renew", "-r", "x", "--owner", holder.owner}), 77);
  }
}
