// What the lock model refuses, worded once (store::refusal_error and
// store::describe(Cycle)): each case expects the same line on every backend,
// so the suite's run per backend checks that SQLite and PostgreSQL say the
// same thing for the same case (man clock, GUARANTEES: one lock model).
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "harness.hpp"

using namespace clk::test;

namespace {

// Owner ids, as messages name them, and the ID.SECRET that --owner takes.
const std::string k_id_a = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa";
const std::string k_id_b = "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb";
const std::string k_id_c = "cccccccc-cccc-4ccc-8ccc-cccccccccccc";
const std::string k_id_d = "dddddddd-dddd-4ddd-8ddd-dddddddddddd";
const std::string k_secret = ".0123456789abcdef0123456789abcdef";
const std::string k_owner_a = k_id_a + k_secret;
const std::string k_owner_b = k_id_b + k_secret;
const std::string k_owner_c = k_id_c + k_secret;
const std::string k_owner_d = k_id_d + k_secret;

// The one line of stderr, which must say `expected` after "clock: …: ".
void check_says(const Result& result, int status, const std::string& expected) {
  INFO(result.describe());
  CHECK(result.status == status);
  auto lines = result.err_lines();
  REQUIRE(lines.size() == 1);
  const std::string& line = lines.front();
  CHECK(line.size() >= expected.size());
  CHECK(line.substr(line.size() - std::min(line.size(), expected.size())) == expected);
}

}  // namespace

TEST_SUITE("refusals") {
  TEST_CASE("renew of a lease that is gone or expired") {
    TestEnv env;
    check_says(env.clock({"renew", "-r", "gone", "--owner", k_owner_a}), 77,
               "the lease on gone is gone (released, expired, or released by force); it cannot "
               "be renewed");

    env.acquire({"-r", "short", "--owner", k_owner_a, "--ttl", "1s"});
    REQUIRE(await([&] { return env.holders_of("short").empty(); }, 10s, 50ms));
    check_says(env.clock({"renew", "-r", "short", "--owner", k_owner_a}), 77,
               "the lease on short expired before this renewal; it cannot be renewed");
  }

  TEST_CASE("release by another owner, of nothing, forced of nothing, and after expiry") {
    TestEnv env;
    env.acquire({"-r", "x", "--owner", k_owner_a});
    check_says(env.clock({"release", "-r", "x", "--owner", k_owner_b}), 77,
               "x is held by another owner, not by owner " + k_id_b +
                   "; check --owner or CLOCK_OWNER, or release it with --force");
    check_says(env.clock({"release", "-r", "free", "--owner", k_owner_b}), 77,
               "owner " + k_id_b + " does not hold free; nobody does (look with 'clock status')");
    check_says(env.clock({"release", "-r", "free", "--force"}), 77, "nobody holds free");

    env.acquire({"-r", "short", "--owner", k_owner_a, "--ttl", "1s"});
    REQUIRE(await([&] { return env.holders_of("short").empty(); }, 10s, 50ms));
    check_says(env.clock({"release", "-r", "short", "--owner", k_owner_a}), 77,
               "the lease on short had expired before this release; another owner may have held "
               "it since");
  }

  TEST_CASE("--slots that disagree with the holders, and an exclusive re-entry of a shared lock") {
    TestEnv env;
    env.acquire({"-r", "plain", "--owner", k_owner_a});
    check_says(env.clock({"acquire", "-n", "-r", "plain", "--slots", "2", "--owner", k_owner_a}),
               64,
               "plain is held or awaited as a plain lock, but this request says --slots 2; drop "
               "--slots or use another resource");

    env.acquire({"-r", "pool", "--slots", "3", "--owner", k_owner_a});
    check_says(env.clock({"acquire", "-n", "-r", "pool", "--owner", k_owner_a}), 64,
               "pool is a semaphore of 3 slots: add --slots 3");
    check_says(env.clock({"acquire", "-n", "-r", "pool", "--slots", "2", "--owner", k_owner_b}), 64,
               "pool is a semaphore of 3 slots, but this request says --slots 2; use the same "
               "number");

    env.acquire({"-r", "read", "-s", "--owner", k_owner_a});
    check_says(env.clock({"acquire", "-n", "-r", "read", "--owner", k_owner_a}), 64,
               "this owner holds read shared and cannot re-enter it exclusive; release it first");
  }

  TEST_CASE("a deadlock names the cycle from the requester, owner by owner") {
    TestEnv env;
    env.acquire({"-r", "x", "--owner", k_owner_a});
    env.acquire({"-r", "y", "--owner", k_owner_b});
    auto queued =
        env.spawn(env.clock_command({"acquire", "-r", "x", "-w", "60s", "--owner", k_owner_b}));
    REQUIRE(await([&] { return !env.status()["waiters"].empty(); }, 30s, 20ms));

    const std::string host = host_name();
    check_says(env.clock({"acquire", "-r", "y", "-w", "30s", "--owner", k_owner_a}), 76,
               "deadlock: owner " + k_id_a + " (" + host + ") -> y -> owner " + k_id_b + " (" +
                   host + ") -> x -> owner " + k_id_a + " (" + host +
                   "); not waiting, so the other side can proceed");

    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", k_owner_a}), 0);
    CHECK_EXIT(queued->wait(30s), 0);
  }

  // A waits for y, held by B; B is queued for z behind C; C waits for x, which
  // A holds. The edge from B to C is a queue entry ahead, not a lease (D holds
  // z): both backends follow it.
  TEST_CASE("a cycle through a queue entry ahead is a deadlock too") {
    TestEnv env;
    env.acquire({"-r", "x", "--owner", k_owner_a});
    env.acquire({"-r", "y", "--owner", k_owner_b});
    env.acquire({"-r", "z", "--owner", k_owner_d});
    auto waiting_c = env.spawn(
        env.clock_command({"acquire", "-r", "z", "-r", "x", "-w", "60s", "--owner", k_owner_c}));
    REQUIRE(await([&] { return env.status()["waiters"].size() == 2; }, 30s, 20ms));
    auto waiting_b =
        env.spawn(env.clock_command({"acquire", "-r", "z", "-w", "60s", "--owner", k_owner_b}));
    REQUIRE(await([&] { return env.status()["waiters"].size() == 3; }, 30s, 20ms));

    const std::string host = host_name();
    check_says(env.clock({"acquire", "-r", "y", "-w", "30s", "--owner", k_owner_a}), 76,
               "deadlock: owner " + k_id_a + " (" + host + ") -> y -> owner " + k_id_b + " (" +
                   host + ") -> z -> owner " + k_id_c + " (" + host + ") -> x -> owner " + k_id_a +
                   " (" + host + "); not waiting, so the other side can proceed");

    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", k_owner_a}), 0);
    CHECK_EXIT(env.clock({"release", "-r", "z", "--owner", k_owner_d}), 0);
    CHECK_EXIT(waiting_c->wait(30s), 0);
    CHECK_EXIT(env.clock({"release", "-r", "z", "-r", "x", "--owner", k_owner_c}), 0);
    CHECK_EXIT(waiting_b->wait(30s), 0);
  }

  // Waiters killed once queued leave their entries until these expire (30 s
  // at the default TTL): the lock is free, but three earlier requests are in
  // the way. PostgreSQL's reply lists only the first of them and counts them
  // all; the message gives the count on both backends.
  TEST_CASE("a free lock that earlier requests wait for counts them all") {
    TestEnv env;
    env.acquire({"-r", "q", "--owner", k_owner_a});
    std::vector<std::unique_ptr<Process>> waiters;
    for (const auto* owner : {&k_owner_b, &k_owner_c, &k_owner_d}) {
      waiters.push_back(
          env.spawn(env.clock_command({"acquire", "-r", "q", "-w", "60s", "--owner", *owner})));
      REQUIRE(await([&] { return env.status()["waiters"].size() == waiters.size(); }, 30s, 20ms));
    }
    for (auto& waiter : waiters) {
      waiter->signal(SIGKILL);
      waiter->wait(30s);
    }
    CHECK_EXIT(env.clock({"release", "-r", "q", "--owner", k_owner_a}), 0);

    // Without queueing (-n), and after queueing behind them (-w).
    const std::string expected = "3 earlier request(s) wait for q, first " + host_name() + " pid ";
    // -v: off a terminal, -n alone is silent (as flock -n); -v's first line
    // names the database.
    for (const auto& wait : {"-n", "--wait=1s"}) {
      auto refused = env.clock({"-v", "acquire", wait, "-r", "q"});
      INFO(refused.describe());
      CHECK(refused.status == 75);
      std::vector<std::string> errors;
      for (const auto& line : refused.err_lines()) {
        if (line.find("error: ") != std::string::npos)
          errors.push_back(line);
      }
      REQUIRE(errors.size() == 1);
      CHECK(errors.front().find(expected) != std::string::npos);
    }
  }
}
