// Missed periods from the starts of successful runs (store/expected.hpp):
// a success covers one period from its start; uncovered time is cut into
// periods from the end of the last coverage.
#include <chrono>

#include <doctest/doctest.h>

#include "store/expected.hpp"

using namespace std::chrono_literals;
using clk::lock::Instant;
using clk::store::ExpectedRun;

namespace {

Instant at(std::chrono::seconds s) {
  return Instant(s);
}

ExpectedRun run_every(std::chrono::seconds every, std::vector<Instant> successes,
                      Instant declared = Instant(0s)) {
  return {.ns = "",
          .resource = clk::lock::Resource::parse("job"),
          .every = every,
          .declared_at = declared,
          .successes = std::move(successes)};
}

}  // namespace

TEST_SUITE("store::expected") {
  TEST_CASE("runs each within its period miss nothing and are not overdue") {
    auto run = run_every(10s, {at(0s), at(9s), at(18s), at(27s)});
    auto missed = missed_periods(run, at(0s), at(30s));
    CHECK(missed.periods.empty());
    CHECK(missed.missed == 0);
    CHECK_FALSE(overdue(run, at(36s)));
    CHECK(overdue(run, at(37s)));
    CHECK(due_at(run) == at(37s));
  }

  TEST_CASE(
      "a late run ends the stretch without a missed period; a whole period without one "
      "is missed") {
    // Covered until 10; 10..20 has no run (missed); the run at 25 is late in 20..30.
    auto run = run_every(10s, {at(0s), at(25s)});
    auto missed = missed_periods(run, at(0s), at(30s));
    REQUIRE(missed.periods.size() == 1);
    CHECK(missed.periods[0].from == at(10s));
    CHECK(missed.periods[0].to == at(20s));
    CHECK_FALSE(missed.periods[0].open);
    CHECK(missed.missed == 1);
  }

  TEST_CASE("after the last run: whole periods are missed, the current one is open (overdue)") {
    auto run = run_every(10s, {at(0s)});
    auto missed = missed_periods(run, at(0s), at(35s));
    REQUIRE(missed.periods.size() == 3);
    CHECK(missed.periods[0].from == at(10s));
    CHECK(missed.periods[1].from == at(20s));
    CHECK(missed.periods[2].from == at(30s));
    CHECK(missed.periods[2].open);
    CHECK(missed.missed == 2);
    CHECK(*last_success(run) == at(0s));
  }

  TEST_CASE("periods that ended before --since are not listed nor counted") {
    auto run = run_every(10s, {at(0s)});
    auto missed = missed_periods(run, at(25s), at(35s));
    REQUIRE(missed.periods.size() == 2);
    CHECK(missed.periods[0].from == at(20s));
    CHECK(missed.missed == 1);
  }

  TEST_CASE("a resource never run is due one period after its declaration") {
    auto run = run_every(10s, {}, at(100s));
    CHECK_FALSE(last_success(run).has_value());
    CHECK_FALSE(overdue(run, at(109s)));
    CHECK(overdue(run, at(110s)));
    auto missed = missed_periods(run, at(0s), at(125s));
    REQUIRE(missed.periods.size() == 2);
    CHECK(missed.periods[0].from == at(110s));
    CHECK(missed.missed == 1);
  }

  TEST_CASE("a long-dead job lists at most k_periods_listed periods but counts them all") {
    auto run = run_every(1s, {at(0s)});
    auto missed = missed_periods(run, at(0s), at(5001s));
    CHECK(missed.periods.size() == clk::store::k_periods_listed);
    CHECK(missed.missed == 5000);
    // Counted without walking them: a year of seconds.
    auto year = missed_periods(run, at(0s), at(31'536'001s));
    CHECK(year.missed == 31'536'000);
  }
}
