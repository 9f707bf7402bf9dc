// Missed runs (man clock, COMMANDS): which periods of a resource's expected period went
// by with no successful run, from the starts of its successful runs. Pure
// arithmetic on instants the store read from the database's clock.
//
// A successful run started at s covers [s, s + every); so does the first
// declaration. Where nothing covers, the time is cut into periods of
// `every` from the end of the last coverage: a period that ended with no
// successful run started in it is missed; the one that has not ended yet
// (no run since) makes the resource overdue. A run that starts late, inside
// such a period, ends the stretch: its period is not missed.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "store/store.hpp"

namespace clk::store {

struct MissedPeriod {
  lock::Instant from{};
  lock::Instant to{};
  bool open = false;  // not over yet: the resource is overdue since `from`
};

// The most periods listed per resource: a long-dead job with a short period
// would list thousands; the count says how many there were.
inline constexpr std::size_t k_periods_listed = 1000;

struct MissedRuns {
  std::vector<MissedPeriod> periods;  // ascending, at most k_periods_listed
  std::int64_t missed = 0;            // closed periods missed (beyond those listed too)
};

// The latest success, if any.
std::optional<lock::Instant> last_success(const ExpectedRun& run);
// When the resource is next due: the end of the last coverage.
lock::Instant due_at(const ExpectedRun& run);
// Whether no successful run started within `every` before `now`.
bool overdue(const ExpectedRun& run, lock::Instant now);
// The periods that ended after `since` with no successful run, and the open
// one when overdue at `now`.
MissedRuns missed_periods(const ExpectedRun& run, lock::Instant since, lock::Instant now);

}  // namespace clk::store
