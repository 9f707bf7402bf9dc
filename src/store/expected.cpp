// Missed periods from the starts of successful runs (expected.hpp).
#include "store/expected.hpp"

#include <algorithm>

namespace clk::store {

namespace {

// What covers time: the successes, and the first declaration unless a
// success the store read lies before it (then those after it are all read,
// and a declaration older than them changes nothing).
std::vector<lock::Instant> coverage_starts(const ExpectedRun& run) {
  std::vector<lock::Instant> starts = run.successes;
  std::sort(starts.begin(), starts.end());
  if (starts.empty() || run.declared_at >= starts.front())
    starts.push_back(run.declared_at);
  std::sort(starts.begin(), starts.end());
  return starts;
}

}  // namespace

std::optional<lock::Instant> last_success(const ExpectedRun& run) {
  if (run.successes.empty())
    return std::nullopt;
  return *std::max_element(run.successes.begin(), run.successes.end());
}

lock::Instant due_at(const ExpectedRun& run) {
  auto starts = coverage_starts(run);
  return starts.back() + run.every;
}

bool overdue(const ExpectedRun& run, lock::Instant now) {
  return now >= due_at(run);
}

MissedRuns missed_periods(const ExpectedRun& run, lock::Instant since, lock::Instant now) {
  MissedRuns out;
  if (run.every.count() <= 0)
    return out;
  auto starts = coverage_starts(run);
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const bool last = i + 1 == starts.size();
    const lock::Instant next = last ? now : starts[i + 1];
    const lock::Instant uncovered = starts[i] + run.every;
    if (next <= uncovered)
      continue;
    // Skip the periods that ended at or before `since` without counting them.
    std::int64_t k = 0;
    if (since > uncovered)
      k = (since - uncovered) / run.every;
    for (;; ++k) {
      const lock::Instant from = uncovered + k * run.every;
      const lock::Instant to = from + run.every;
      if (from >= next)
        break;
      if (out.periods.size() >= k_periods_listed) {
        out.missed += (next - from) / run.every;  // counted, not listed
        break;
      }
      if (to <= next) {
        ++out.missed;  // ended with no run started in it
        out.periods.push_back({from, to, false});
        continue;
      }
      // Cut by the next run (it ran late: not missed) or by now (open).
      if (last)
        out.periods.push_back({from, to, true});
      break;
    }
  }
  return out;
}

}  // namespace clk::store
