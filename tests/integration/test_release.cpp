// clock release and renew (man clock, COMMANDS and EXIT STATUS: exit 77 for a lock this owner does
// not hold), and forced releases (man clock, GUARANTEES: recorded, and the next token is larger).
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "fault_tools.hpp"
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

    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", holder.credential}), 0);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x"}), 0);
  }

  TEST_CASE("release takes the owner from CLOCK_OWNER") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "x"});
    CHECK_EXIT(env.clock({"release", "-r", "x"}, {{"CLOCK_OWNER", random_uuid()}}), 77);
    CHECK_EXIT(env.clock({"release", "-r", "x"}, {{"CLOCK_OWNER", holder.credential}}), 0);
    CHECK(env.holders_of("x").empty());
  }

  TEST_CASE("--owner beats CLOCK_OWNER") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "x"});
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", holder.credential},
                         {{"CLOCK_OWNER", random_uuid()}}),
               0);
  }

  TEST_CASE("releasing a lock twice exits 77 the second time") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "x"});
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", holder.credential}), 0);
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", holder.credential}), 77);
  }

  // PostgreSQL releases one live lease held once through a fast path of its
  // own (sql/postgres/functions/30_renew_release.sql); anything else through the general one. These
  // check that both leave the same record, and that the cases the fast path
  // must not take (re-entered, expired) still mean what they meant.
  TEST_CASE("releasing one lease records what releasing two at once records") {
    TestEnv env;
    Acquired solo = env.acquire({"-r", "solo"});
    Acquired pair = env.acquire({"-r", "pair.a", "-r", "pair.b"});
    CHECK_EXIT(env.clock({"release", "-r", "solo", "--owner", solo.credential}), 0);
    CHECK_EXIT(env.clock({"release", "-r", "pair.a", "-r", "pair.b", "--owner", pair.credential}),
               0);
    CHECK(env.holders_of("solo").empty());
    CHECK(env.holders_of("pair").empty());

    for (const std::string resource : {"solo", "pair.a"}) {
      CAPTURE(resource);
      auto events = history_of(env, resource);
      REQUIRE(events.size() == 2);
      const auto& acquired = events[0];
      const auto& released = events[1];
      CHECK(acquired["event"] == "acquired");
      CHECK(released["event"] == "released");
      for (const char* field : {"namespace", "resource", "owner", "mode", "token", "host", "ip",
                                "pid", "user", "command"}) {
        CAPTURE(field);
        CHECK(released[field] == acquired[field]);
      }
      CHECK(released["by"].is_null());
      REQUIRE(released["held_for_ms"].is_number_integer());
      CHECK(released["held_for_ms"].get<long long>() >= 0);
      // Both instants are milliseconds, rounded: within 1 ms of held_for.
      long long between =
          epoch_ms(released["at"].get<std::string>()) - epoch_ms(acquired["at"].get<std::string>());
      CHECK(std::llabs(released["held_for_ms"].get<long long>() - between) <= 1);
    }
  }

  TEST_CASE("a release of a re-entered lock gives up one level and keeps the lock") {
    TestEnv env;
    Acquired first = env.acquire({"-r", "nest"});
    Acquired again = env.acquire({"-r", "nest", "--owner", first.credential});
    CHECK(again.token() == first.token());
    CHECK_EXIT(env.clock({"release", "-r", "nest", "--owner", first.credential}), 0);
    auto holders = env.holders_of("nest");
    REQUIRE(holders.size() == 1);
    CHECK(holders[0]["depth"] == 1);
    CHECK(history_of(env, "nest").size() == 1);  // acquired: a level given up is no event
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "nest"}), 75);
    CHECK_EXIT(env.clock({"release", "-r", "nest", "--owner", first.credential}), 0);
    CHECK(env.holders_of("nest").empty());
  }

  TEST_CASE("a release after the lease expired exits 77 and records the expiry, not a release") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "lapsed", "--ttl", "1s"});
    // Expired: no longer a live holder, though its row is still there.
    REQUIRE(await([&] { return env.holders_of("lapsed").empty(); }, 10s, 50ms));
    Result late = env.clock({"release", "-r", "lapsed", "--owner", holder.credential});
    CHECK_EXIT(late, 77);
    CHECK(late.err_lines().size() == 1);
    auto events = history_of(env, "lapsed");
    REQUIRE(events.size() == 2);
    CHECK(events[1]["event"] == "expired");
    // At its expiry, not at the release: held for its TTL.
    CHECK(events[1]["held_for_ms"] == 1000);
    CHECK(std::llabs(epoch_ms(events[1]["at"]) - epoch_ms(events[0]["at"]) - 1000) <= 1);
    CHECK(env.holders_of("lapsed", true).empty());
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
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", holder.credential}), 77);

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

  TEST_CASE(
      "release --force removes every holder of a shared lock, records the live ones forced and "
      "the lapsed one expired; a request queued behind a forced holder is granted next") {
    TestEnv env;
    Acquired first = env.acquire({"-s", "-r", "pool"});
    Acquired second = env.acquire({"-s", "-r", "pool"});
    Acquired lapsing = env.acquire({"-s", "-r", "pool", "--ttl", "1s"});
    REQUIRE(await([&] { return env.holders_of("pool").size() == 2; }, 30s, 100ms));
    CHECK_EXIT(env.clock({"release", "--force", "-r", "pool"}), 0);
    CHECK(env.holders_of("pool", true).empty());

    std::map<std::string, std::string> ends;  // owner -> how its lease ended
    for (const auto& event : history_of(env, "pool")) {
      if (event["event"] == "acquired")
        continue;
      ends[event["owner"]] = event["event"];
      if (event["event"] == "forced") {
        CHECK(event["by"].get<std::string>().find(" pid ") != std::string::npos);
        CHECK_FALSE(event["db_user"].get<std::string>().empty());
      }
    }
    CHECK(ends == std::map<std::string, std::string>{{first.owner, "forced"},
                                                     {second.owner, "forced"},
                                                     {lapsing.owner, "expired"}});
    Result metrics = env.clock({"status", "--format", "prometheus"});
    CHECK(runs_total(metrics.out)["/pool/forced"] == 2);

    // The queue is not the holders': a waiter stays and is granted.
    Acquired holder = env.acquire({"-r", "pool"});
    auto queued = env.spawn(env.clock_command({"acquire", "-w", "60s", "-r", "pool"}));
    REQUIRE(await([&] { return env.status()["waiters"].size() == 1; }, 30s, 20ms));
    CHECK_EXIT(env.clock({"release", "--force", "-r", "pool"}), 0);
    CHECK_EXIT(queued->wait(30s), 0);
    auto holders = env.holders_of("pool");
    REQUIRE(holders.size() == 1);
    CHECK(holders[0]["token"].get<long long>() > holder.token());
  }

  TEST_CASE("renew extends a held lease, keeping its token") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "x", "--ttl", "30s"});
    CHECK_EXIT(env.clock({"renew", "-r", "x", "--owner", holder.credential, "--ttl", "1h"}), 0);
    auto holders = env.holders_of("x");
    REQUIRE(holders.size() == 1);
    CHECK(holders[0]["token"] == holder.token());
    CHECK(holders[0]["expires_in_ms"].get<long long>() > 30'000);
  }

  TEST_CASE("renew by an owner that does not hold the lock exits 77") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "x"});
    CHECK_EXIT(env.clock({"renew", "-r", "x", "--owner", random_uuid()}), 77);
    CHECK_EXIT(env.clock({"renew", "-r", "y", "--owner", holder.credential}), 77);
  }

  TEST_CASE("renew of a held and a never-held resource renews neither and records nothing") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "held", "--ttl", "60s"});
    const auto before = env.holders_of("held").at(0)["expires_at"];
    CHECK_EXIT(env.clock({"renew", "-r", "held", "-r", "never", "--owner", holder.credential,
                          "--ttl", "1h"}),
               77);
    CHECK(env.holders_of("held").at(0)["expires_at"] == before);
    CHECK(history_of(env, "held").size() == 1);
    CHECK(history_of(env, "never").empty());
  }

  TEST_CASE("renew of a lease that expired exits 77") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "x", "--ttl", "1s"});
    REQUIRE(await([&] { return env.holders_of("x").empty(); }, 30s, 100ms));
    CHECK_EXIT(env.clock({"renew", "-r", "x", "--owner", holder.credential}), 77);
    // The lapsed lease is gone and lost to its holder, which says so again
    // at each renewal it tries (its secret proves it held x).
    CHECK(env.holders_of("x", true).empty());
    CHECK(event_names(history_of(env, "x"), holder.owner) ==
          std::vector<std::string>{"acquired", "lost"});
    CHECK_EXIT(env.clock({"renew", "-r", "x", "--owner", holder.credential}), 77);
    CHECK(event_names(history_of(env, "x"), holder.owner) ==
          std::vector<std::string>{"acquired", "lost", "lost"});
  }

  TEST_CASE("renew of a lease that is gone exits 77 and records it as lost, for its owner only") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "x"});
    CHECK_EXIT(env.clock({"release", "--force", "-r", "x"}), 0);
    CHECK_EXIT(env.clock({"renew", "-r", "x", "--owner", holder.credential}), 77);
    // An id that never held x: refused too, and nothing recorded in its name.
    CHECK_EXIT(env.clock({"renew", "-r", "x", "--owner", random_owner()}), 77);
    Result history = env.clock({"history", "x", "--format", "json", "--event", "lost"});
    REQUIRE_EXIT(history, 0);
    auto events = nlohmann::json::parse(history.out)["events"];
    INFO(events.dump(2));
    REQUIRE(events.size() == 1);
    CHECK(events[0]["owner"] == holder.owner);
    CHECK(events[0]["resource"] == "x");
  }
}
