// How often a MariaDB waiter looks again (src/store/mariadb/waiting_pace.*):
// plain arithmetic on what a blocked attempt said, no server.
#include <chrono>

#include <doctest/doctest.h>

#include "store/mariadb/waiting_pace.hpp"

using namespace std::chrono_literals;
using clk::store::Attempt;
using clk::store::k_waiters_ahead_counted;
using clk::store::mariadb::WaitingPace;

namespace {

// A re-attempt's fast-path reply: the first entry ahead at position 1000,
// those ahead counted up to the bound.
Attempt far_back_reply() {
  Attempt attempt;
  attempt.blocking_waiters.push_back({.ns = "",
                                      .resource = clk::lock::Resource::parse("q.x"),
                                      .owner = {},
                                      .info = {},
                                      .position = 1000});
  attempt.waiters_ahead = k_waiters_ahead_counted;
  return attempt;
}

}  // namespace

TEST_CASE("a waiter past the count's bound looks as seldom as its place in the queue says") {
  const auto now = WaitingPace::Clock::now();
  // 180 positions behind the first: looks at least 180 steps apart (less
  // the jitter), not 64.
  WaitingPace far;
  far.blocked(far_back_reply(), 1180, std::nullopt);
  CHECK(far.next_look(now) >= 0.75 * 180 * WaitingPace::k_step);
  // Without its own position the count is all it has.
  WaitingPace counted;
  counted.blocked(far_back_reply(), std::nullopt, std::nullopt);
  CHECK(counted.next_look(now) <= 1.25 * k_waiters_ahead_counted * WaitingPace::k_step);
}
