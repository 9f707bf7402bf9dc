// The compatibility rules of man clock, DESCRIPTION as lock::decide and lock::conflicts apply
// them: modes, ancestry, namespaces, re-entry, semaphores and the FIFO queue.
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "lock/conflict.hpp"

using namespace clk::lock;

namespace {

const OwnerId k_alice = OwnerId::parse("00000000-0000-4000-8000-00000000000a");
const OwnerId k_bob = OwnerId::parse("00000000-0000-4000-8000-00000000000b");
const OwnerId k_carol = OwnerId::parse("00000000-0000-4000-8000-00000000000c");

Claim claim(const OwnerId& owner, std::string_view resource, Mode mode = Mode::exclusive,
            int slots = 0, std::string ns = "") {
  return Claim{std::move(ns), Resource::parse(resource), owner, mode, slots};
}

Lease lease(const OwnerId& owner, std::string_view resource, Mode mode = Mode::exclusive,
            int slots = 0, std::string ns = "", Token token = 1) {
  return Lease{.ns = std::move(ns),
               .resource = Resource::parse(resource),
               .owner = owner,
               .info = {},
               .mode = mode,
               .slots = slots,
               .token = token,
               .expires_at = std::nullopt,
               .leftovers = {}};
}

Waiter waiter(const OwnerId& owner, std::string_view resource, Mode mode = Mode::exclusive,
              int slots = 0, std::int64_t position = 1, std::string ns = "") {
  return Waiter{.ns = std::move(ns),
                .resource = Resource::parse(resource),
                .owner = owner,
                .info = {},
                .mode = mode,
                .slots = slots,
                .position = position};
}

Verdict verdict(const Claim& request, const std::vector<Lease>& leases,
                const std::vector<Waiter>& waiters = {}) {
  return decide(request, leases, waiters).verdict;
}

}  // namespace

// doctest prints enum values as numbers without this.
namespace doctest {
template <>
struct StringMaker<Verdict> {
  static String convert(Verdict v) {
    switch (v) {
      case Verdict::grant:
        return "grant";
      case Verdict::reenter:
        return "reenter";
      case Verdict::blocked:
        return "blocked";
      case Verdict::slots_mismatch:
        return "slots_mismatch";
      case Verdict::upgrade:
        return "upgrade";
    }
    return "?";
  }
};
}  // namespace doctest

TEST_SUITE("lock::conflict") {
  TEST_CASE("a free resource is granted") {
    CHECK(verdict(claim(k_alice, "x"), {}) == Verdict::grant);
  }

  TEST_CASE("an exclusive lock blocks another owner's exclusive request and names the holder") {
    auto decision = decide(claim(k_bob, "x"), {lease(k_alice, "x")}, {});
    CHECK(decision.verdict == Verdict::blocked);
    REQUIRE(decision.blocking_leases.size() == 1);
    CHECK(decision.blocking_leases[0].owner == k_alice);
    CHECK(decision.blocking_waiters.empty());
  }

  TEST_CASE("shared locks do not conflict with each other") {
    CHECK(verdict(claim(k_bob, "x", Mode::shared), {lease(k_alice, "x", Mode::shared)}) ==
          Verdict::grant);
    CHECK(verdict(claim(k_carol, "x", Mode::shared),
                  {lease(k_alice, "x", Mode::shared), lease(k_bob, "x", Mode::shared)}) ==
          Verdict::grant);
    CHECK_FALSE(conflicts(claim(k_alice, "x", Mode::shared), claim(k_bob, "x", Mode::shared)));
  }

  TEST_CASE("shared and exclusive conflict either way round") {
    CHECK(verdict(claim(k_bob, "x"), {lease(k_alice, "x", Mode::shared)}) == Verdict::blocked);
    CHECK(verdict(claim(k_bob, "x", Mode::shared), {lease(k_alice, "x")}) == Verdict::blocked);
  }

  TEST_CASE("an ancestor conflicts with its descendant") {
    CHECK(verdict(claim(k_bob, "foo.bar.woof"), {lease(k_alice, "foo")}) == Verdict::blocked);
    CHECK(verdict(claim(k_bob, "foo"), {lease(k_alice, "foo.bar.woof")}) == Verdict::blocked);
    CHECK(conflicts(claim(k_alice, "foo"), claim(k_bob, "foo.bar")));
    CHECK(conflicts(claim(k_alice, "foo.bar"), claim(k_bob, "foo")));
  }

  TEST_CASE("a shared ancestor and a shared descendant do not conflict") {
    CHECK(verdict(claim(k_bob, "foo.bar", Mode::shared), {lease(k_alice, "foo", Mode::shared)}) ==
          Verdict::grant);
    CHECK(verdict(claim(k_bob, "foo.bar"), {lease(k_alice, "foo", Mode::shared)}) ==
          Verdict::blocked);
  }

  TEST_CASE("siblings never conflict") {
    CHECK(verdict(claim(k_bob, "foo.baz"), {lease(k_alice, "foo.bar")}) == Verdict::grant);
    CHECK_FALSE(conflicts(claim(k_alice, "foo.bar"), claim(k_bob, "foo.baz")));
  }

  TEST_CASE("only whole segments make an ancestor") {
    CHECK(verdict(claim(k_bob, "foobar"), {lease(k_alice, "foo")}) == Verdict::grant);
    CHECK(verdict(claim(k_bob, "jobX1.y"), {lease(k_alice, "job_1")}) == Verdict::grant);
    CHECK(verdict(claim(k_bob, "foo"), {lease(k_alice, "foobar.baz")}) == Verdict::grant);
  }

  TEST_CASE("locks in different namespaces never conflict") {
    CHECK(verdict(claim(k_bob, "x", Mode::exclusive, 0, "dc2"),
                  {lease(k_alice, "x", Mode::exclusive, 0, "dc1")}) == Verdict::grant);
    CHECK(verdict(claim(k_bob, "x"), {lease(k_alice, "x", Mode::exclusive, 0, "dc1")}) ==
          Verdict::grant);
    CHECK_FALSE(conflicts(claim(k_alice, "x", Mode::exclusive, 0, "a"),
                          claim(k_bob, "x", Mode::exclusive, 0, "b")));
    CHECK(conflicts(claim(k_alice, "x", Mode::exclusive, 0, "a"),
                    claim(k_bob, "x", Mode::exclusive, 0, "a")));
  }

  TEST_CASE("the same owner re-enters a resource it holds") {
    CHECK(verdict(claim(k_alice, "x"), {lease(k_alice, "x")}) == Verdict::reenter);
    CHECK(verdict(claim(k_alice, "x", Mode::shared), {lease(k_alice, "x", Mode::shared)}) ==
          Verdict::reenter);
    CHECK_FALSE(conflicts(claim(k_alice, "x"), claim(k_alice, "x")));
  }

  TEST_CASE("re-entry in one namespace is not re-entry in another") {
    CHECK(verdict(claim(k_alice, "x", Mode::exclusive, 0, "dc2"),
                  {lease(k_alice, "x", Mode::exclusive, 0, "dc1")}) == Verdict::grant);
  }

  TEST_CASE("an owner re-enters a resource it holds even with a waiter queued behind it") {
    // The owner already holds x exclusively, so nobody else can: re-entry wins
    // even with an earlier waiter queued behind it (otherwise nesting deadlocks).
    CHECK(verdict(claim(k_alice, "x"), {lease(k_alice, "x")}, {waiter(k_bob, "x")}) ==
          Verdict::reenter);
  }

  TEST_CASE("an owner holding shared that asks for exclusive is an upgrade") {
    CHECK(verdict(claim(k_alice, "x"), {lease(k_alice, "x", Mode::shared)}) == Verdict::upgrade);
  }

  TEST_CASE("a semaphore admits up to N holders") {
    CHECK(verdict(claim(k_bob, "pool", Mode::exclusive, 2),
                  {lease(k_alice, "pool", Mode::exclusive, 2)}) == Verdict::grant);
    auto decision = decide(
        claim(k_carol, "pool", Mode::exclusive, 2),
        {lease(k_alice, "pool", Mode::exclusive, 2), lease(k_bob, "pool", Mode::exclusive, 2)}, {});
    CHECK(decision.verdict == Verdict::blocked);
    CHECK(decision.blocking_leases.size() == 2);
  }

  TEST_CASE("semaphore holders that disagree on N get a slot mismatch") {
    auto decision = decide(claim(k_bob, "pool", Mode::exclusive, 3),
                           {lease(k_alice, "pool", Mode::exclusive, 2)}, {});
    CHECK(decision.verdict == Verdict::slots_mismatch);
    CHECK(decision.other_slots == 2);
  }

  TEST_CASE("a semaphore waiter that disagrees on N also gives a slot mismatch") {
    auto decision = decide(claim(k_bob, "pool", Mode::exclusive, 3), {},
                           {waiter(k_alice, "pool", Mode::exclusive, 2)});
    CHECK(decision.verdict == Verdict::slots_mismatch);
    CHECK(decision.other_slots == 2);
  }

  TEST_CASE("a semaphore conflicts with related locks as an exclusive lock would") {
    CHECK(verdict(claim(k_bob, "pool", Mode::exclusive, 2), {lease(k_alice, "pool")}) ==
          Verdict::blocked);
    CHECK(verdict(claim(k_bob, "pool.x"), {lease(k_alice, "pool", Mode::exclusive, 2)}) ==
          Verdict::blocked);
    CHECK(verdict(claim(k_bob, "pool", Mode::exclusive, 2),
                  {lease(k_alice, "pool.x", Mode::shared)}) == Verdict::blocked);
    CHECK(verdict(claim(k_bob, "pool.x", Mode::shared),
                  {lease(k_alice, "pool", Mode::exclusive, 2)}) == Verdict::blocked);
  }

  TEST_CASE("earlier semaphore waiters take the free slots first") {
    // 3 slots, 1 held: one earlier waiter leaves one slot for us, two leave none.
    std::vector<Lease> held = {lease(k_alice, "pool", Mode::exclusive, 3)};
    OwnerId dave = OwnerId::parse("00000000-0000-4000-8000-00000000000d");
    CHECK(verdict(claim(k_carol, "pool", Mode::exclusive, 3), held,
                  {waiter(k_bob, "pool", Mode::exclusive, 3, 1)}) == Verdict::grant);
    CHECK(verdict(claim(k_carol, "pool", Mode::exclusive, 3), held,
                  {waiter(k_bob, "pool", Mode::exclusive, 3, 1),
                   waiter(dave, "pool", Mode::exclusive, 3, 2)}) == Verdict::blocked);
  }

  TEST_CASE("an earlier conflicting waiter blocks a later request") {
    // A shared holder would admit another shared request, but an exclusive
    // waiter queued first must not be overtaken (no starvation).
    auto decision = decide(claim(k_carol, "x", Mode::shared), {lease(k_alice, "x", Mode::shared)},
                           {waiter(k_bob, "x")});
    CHECK(decision.verdict == Verdict::blocked);
    CHECK(decision.blocking_leases.empty());
    REQUIRE(decision.blocking_waiters.size() == 1);
    CHECK(decision.blocking_waiters[0].owner == k_bob);
  }

  TEST_CASE("an earlier waiter on an ancestor blocks a later request on a descendant") {
    CHECK(verdict(claim(k_carol, "x.y"), {}, {waiter(k_bob, "x")}) == Verdict::blocked);
  }

  TEST_CASE("earlier waiters that do not conflict do not block") {
    CHECK(verdict(claim(k_carol, "x", Mode::shared), {lease(k_alice, "x", Mode::shared)},
                  {waiter(k_bob, "x", Mode::shared)}) == Verdict::grant);
    CHECK(verdict(claim(k_carol, "y"), {}, {waiter(k_bob, "x")}) == Verdict::grant);
    CHECK(verdict(claim(k_carol, "x", Mode::exclusive, 0, "dc1"), {},
                  {waiter(k_bob, "x", Mode::exclusive, 0, 1, "dc2")}) == Verdict::grant);
  }

  TEST_CASE("the request's own owner in the queue does not block it") {
    CHECK(verdict(claim(k_alice, "x"), {}, {waiter(k_alice, "x")}) == Verdict::grant);
  }

  TEST_CASE("conflicts is symmetric") {
    std::vector<Claim> claims = {
        claim(k_alice, "a"),
        claim(k_bob, "a.b", Mode::shared),
        claim(k_carol, "a", Mode::shared),
        claim(k_bob, "a.c"),
        claim(k_alice, "ab"),
        claim(k_carol, "a", Mode::exclusive, 0, "ns"),
    };
    for (const auto& a : claims) {
      for (const auto& b : claims) {
        CAPTURE(a.resource.str());
        CAPTURE(b.resource.str());
        CHECK(conflicts(a, b) == conflicts(b, a));
      }
    }
  }
}
