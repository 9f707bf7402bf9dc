// clock acquire (man clock, DESCRIPTION, §3): conflicts, -n / -w / -E, leases that expire,
// all-or-nothing over several resources, namespaces, modes, queueing, deadlock
// detection, and the text / json / shell output formats.
#include <optional>
#include <regex>
#include <signal.h>
#include <string>

#include <doctest/doctest.h>

#include "harness.hpp"

using namespace clk::test;

TEST_SUITE("acquire") {
  TEST_CASE("acquire -n of a lock held by another owner exits 75, or the code -E names") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "x"});
    CHECK(is_uuid(holder.owner));
    CHECK(holder.token() > 0);

    // Off a terminal -n is silent (as flock -n); -v shows the one error line.
    Result quiet = env.clock({"acquire", "-n", "-r", "x"});
    CHECK_EXIT(quiet, 75);
    CHECK(quiet.err.empty());
    Result refused = env.clock({"-v", "acquire", "-n", "-r", "x"});
    CHECK_EXIT(refused, 75);
    REQUIRE(refused.err_lines().size() == 2);  // the database in use, then the refusal
    CHECK(refused.err_lines().back().find("error: not acquired") != std::string::npos);
    CHECK(refused.err.find(host_name()) != std::string::npos);  // says who holds it
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x", "-E", "3"}), 3);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x", "--conflict-exit-code", "3"}), 3);

    auto holders = env.holders_of("x");
    REQUIRE(holders.size() == 1);
    CHECK(holders[0]["owner"] == holder.owner);
  }

  TEST_CASE("-w 1s against a held lock exits 75 after about a second") {
    TestEnv env;
    env.acquire({"-r", "x"});
    Result waited = env.clock({"acquire", "-w", "1s", "-r", "x"});
    CHECK_EXIT(waited, 75);
    CHECK(waited.seconds >= 0.8);
    CHECK(waited.seconds <= 5.0);
    // It says who holds the lock.
    CHECK(waited.err.find(host_name()) != std::string::npos);
    // The timed-out request left the queue: a free resource is granted at once.
    CHECK(env.status()["waiters"].empty());
  }

  TEST_CASE("an expired lease lets the next owner in with a larger token") {
    TestEnv env;
    auto start = Clock::now();
    Acquired first = env.acquire({"-r", "x", "--ttl", "2s"});
    Result early = env.clock({"acquire", "-n", "-r", "x"});
    if (Clock::now() - start < 1500ms) {
      CHECK_EXIT(early, 75);  // still live then
    }

    std::optional<Acquired> second;
    bool granted = await(
        [&] {
          Result r = env.clock({"acquire", "--format", "json", "-n", "-r", "x"});
          if (r.status == 0) {
            second = parse_acquired(r.out);
          }
          return r.status == 0;
        },
        30s, 100ms);
    REQUIRE(granted);
    CHECK(second->owner != first.owner);
    CHECK(second->token() > first.token());

    // The lapsed owner cannot release the newer holder's lease.
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", first.credential}), 77);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x"}), 75);

    // The expiry is in history.
    Result history = env.clock({"history", "x", "--format", "json"});
    REQUIRE_EXIT(history, 0);
    bool expired = false;
    nlohmann::json events = nlohmann::json::parse(history.out).at("events");
    for (const auto& event : events) {
      expired |= event.value("event", "") == "expired" && event["owner"] == first.owner &&
                 event["token"] == first.token();
    }
    CHECK_MESSAGE(expired, history.out);
  }

  TEST_CASE("acquire of several resources takes all of them or none") {
    TestEnv env;
    Acquired b_holder = env.acquire({"-r", "b"});
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "a", "-r", "b"}), 75);
    CHECK(env.holders_of("a").empty());
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "a"}), 0);

    CHECK_EXIT(env.clock({"release", "-r", "b", "--owner", b_holder.credential}), 0);
    Acquired both = env.acquire({"-n", "-r", "c", "-r", "d"});
    CHECK(both.tokens.size() == 2);
    CHECK(env.holders_of("c").size() == 1);
    CHECK(env.holders_of("d").size() == 1);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "d"}), 75);
  }

  TEST_CASE("an ancestor and a descendant conflict; siblings and look-alike names do not") {
    TestEnv env;
    env.acquire({"-r", "foo.bar"});
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "foo"}), 75);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "foo.bar.woof"}), 75);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "foo.baz"}), 0);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "foobar"}), 0);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "foo.bar_1"}), 0);

    env.acquire({"-r", "job_1"});
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "jobX1.y"}), 0);
  }

  TEST_CASE("locks in different namespaces never conflict") {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"--namespace", "dc1", "acquire", "-r", "x"}), 0);
    CHECK_EXIT(env.clock({"--namespace", "dc1", "acquire", "-n", "-r", "x"}), 75);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x"}, {{"CLOCK_NAMESPACE", "dc1"}}), 75);
    CHECK_EXIT(env.clock({"--namespace", "dc2", "acquire", "-n", "-r", "x"}), 0);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x"}), 0);  // the global namespace
  }

  TEST_CASE("shared holders coexist and keep an exclusive request out") {
    TestEnv env;
    env.acquire({"-s", "-r", "x"});
    CHECK_EXIT(env.clock({"acquire", "-n", "-s", "-r", "x"}), 0);
    CHECK_EXIT(env.clock({"acquire", "-n", "-x", "-r", "x"}), 75);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x.child"}), 75);
    auto holders = env.holders_of("x");
    CHECK(holders.size() == 2);
    for (const auto& holder : holders)
      CHECK(holder["mode"] == "shared");
  }

  TEST_CASE(
      "the same owner re-enters a lock it holds, keeps the token, and needs as many "
      "releases") {
    TestEnv env;
    std::string owner = random_owner();
    Acquired first = env.acquire({"-r", "x", "--owner", owner});
    Acquired again = env.acquire({"-n", "-r", "x", "--owner", owner});
    CHECK(first.owner == id_of(owner));
    CHECK(first.credential == owner);
    CHECK(again.token() == first.token());

    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", owner}), 0);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x"}), 75);  // one re-entry left
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", owner}), 0);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x"}), 0);
  }

  TEST_CASE("a waiter is granted when the holder releases") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "x"});
    auto waiter = env.spawn(env.clock_command({"acquire", "--format", "json", "-r", "x"}));
    REQUIRE(await([&] { return !env.status()["waiters"].empty(); }, 30s));
    CHECK(waiter->running());

    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", holder.credential}), 0);
    Result granted = waiter->wait(30s);
    REQUIRE_EXIT(granted, 0);
    Acquired next = parse_acquired(granted.out);
    CHECK(next.token() > holder.token());
    CHECK(env.status()["waiters"].empty());
  }

  TEST_CASE("a later shared request does not overtake an earlier exclusive waiter") {
    TestEnv env;
    Acquired reader = env.acquire({"-s", "-r", "x"});
    auto writer = env.spawn(env.clock_command({"acquire", "--format", "json", "-x", "-r", "x"}));
    REQUIRE(await([&] { return !env.status()["waiters"].empty(); }, 30s));

    CHECK_EXIT(env.clock({"acquire", "-n", "-s", "-r", "x"}), 75);
    CHECK(writer->running());
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", reader.credential}), 0);
    CHECK_EXIT(writer->wait(30s), 0);
  }

  TEST_CASE("two owners each waiting for the other's lock are told of the deadlock with 76") {
    TestEnv env;
    std::string alice = random_owner();
    std::string bob = random_owner();
    env.acquire({"-r", "x", "--owner", alice});
    env.acquire({"-r", "y", "--owner", bob});
    auto alice_waits =
        env.spawn(env.clock_command({"acquire", "-w", "60s", "-r", "y", "--owner", alice}));
    REQUIRE(await([&] { return !env.status()["waiters"].empty(); }, 30s));

    // Bob closing the cycle is told at once rather than waiting out -w.
    Result bob_waits = env.clock({"acquire", "-w", "30s", "-r", "x", "--owner", bob});
    CHECK_EXIT(bob_waits, 76);
    CHECK(bob_waits.seconds < 25);
    CHECK(alice_waits->running());
    CHECK_EXIT(env.clock({"release", "-r", "y", "--owner", bob}), 0);
    CHECK_EXIT(alice_waits->wait(30s), 0);
  }

  TEST_CASE("acquire prints the owner id in text format, which alone cannot release") {
    TestEnv env;
    Result acquired = env.clock({"acquire", "-r", "x"});
    REQUIRE_EXIT(acquired, 0);
    std::smatch match;
    std::regex uuid("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
    REQUIRE(std::regex_search(acquired.out, match, uuid));
    CHECK(acquired.out.find(match.str() + ".") == std::string::npos);  // no secret
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", match.str()}), 77);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x"}), 75);
  }

  TEST_CASE("acquire --format json gives the owner and the token") {
    TestEnv env;
    Result acquired = env.clock({"acquire", "--format", "json", "-r", "x"});
    REQUIRE_EXIT(acquired, 0);
    nlohmann::json json = nlohmann::json::parse(acquired.out);
    CHECK(is_uuid(json.at("owner").get<std::string>()));
    CHECK((json.contains("token") || json.contains("tokens")));
    Acquired parsed = parse_acquired(acquired.out);
    auto holders = env.holders_of("x");
    REQUIRE(holders.size() == 1);
    CHECK(holders[0]["token"] == parsed.token());
    CHECK(holders[0]["owner"] == parsed.owner);
  }

  TEST_CASE("acquire --format shell can be eval'd and a release then uses CLOCK_OWNER") {
    TestEnv env;
    Result acquired = env.clock({"acquire", "--format", "shell", "-r", "x"});
    REQUIRE_EXIT(acquired, 0);
    CHECK(acquired.out.find("export") != std::string::npos);

    Result evaluated =
        env.shell("eval \"$ACQUIRED\" && printf '%s\\n%s\\n' \"$CLOCK_OWNER\" \"$CLOCK_TOKEN\"",
                  {{"ACQUIRED", acquired.out}});
    REQUIRE_EXIT(evaluated, 0);
    std::istringstream lines(evaluated.out);
    std::string owner, token;
    std::getline(lines, owner);
    std::getline(lines, token);
    CHECK(is_uuid(id_of(owner)));
    CHECK(std::regex_match(owner, std::regex("[0-9a-f-]{36}\\.[0-9a-f]{32}")));
    CHECK(std::regex_match(token, std::regex("[1-9][0-9]*")));
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x"}), 75);

    // The variables are exported: a child `clock release` without --owner uses them.
    CHECK_EXIT(env.shell("eval \"$ACQUIRED\" && exec \"$T_CLOCK\" release -r x",
                         {{"ACQUIRED", acquired.out}}),
               0);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x"}), 0);
  }

  TEST_CASE("--database on the command line beats CLOCK_DATABASE_URL") {
    TestEnv env;
    std::string elsewhere = "sqlite:" + env.path("elsewhere.db").string();
    REQUIRE_EXIT(env.clock({"--database", env.url(), "acquire", "-r", "x"},
                           {{"CLOCK_DATABASE_URL", elsewhere}}),
                 0);
    CHECK(env.holders_of("x").size() == 1);
  }

  TEST_CASE("--ttl 0 grants a lease that never expires, with a warning") {
    TestEnv env;
    Result acquired = env.clock({"acquire", "--format", "json", "-r", "x", "--ttl", "0"});
    REQUIRE_EXIT(acquired, 0);
    CHECK_FALSE(acquired.err_lines().empty());
    auto holders = env.holders_of("x");
    REQUIRE(holders.size() == 1);
    INFO(holders[0].dump(2));
    CHECK((!holders[0].contains("expires_at") || holders[0]["expires_at"].is_null()));
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x"}), 75);
  }

  TEST_CASE("semaphore holders that disagree on the slot count get a usage error") {
    TestEnv env;
    env.acquire({"-r", "pool", "--slots", "2"});
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "pool", "--slots", "2"}), 0);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "pool", "--slots", "2"}), 75);  // both slots taken
    Result mismatch = env.clock({"acquire", "-n", "-r", "pool", "--slots", "3"});
    CHECK_EXIT(mismatch, 64);
    CHECK(mismatch.err_lines().size() == 1);
  }

  TEST_CASE("a waiter that dies leaves the queue within one TTL") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "x"});
    auto doomed = env.spawn(env.clock_command({"acquire", "-r", "x", "--ttl", "2s"}));
    REQUIRE(await([&] { return !env.status()["waiters"].empty(); }, 30s));
    doomed->signal(SIGKILL);
    doomed->wait(10s);
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", holder.credential}), 0);
    // Without the dead waiter's entry lapsing, this would wait behind it for ever.
    CHECK_EXIT(env.clock({"acquire", "-w", "20s", "-r", "x"}, {}, 60s), 0);
  }
}
