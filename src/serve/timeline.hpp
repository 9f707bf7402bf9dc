// The timeline of `clock serve`: holds as intervals (a bar each, coloured by
// how the hold ended) and the runs that did not happen as marks, derived
// from history events.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/store.hpp"

namespace clk::serve {

struct Interval {
  const store::HistoryEvent* start = nullptr;  // its acquired event; none: before the events read
  const store::HistoryEvent* end = nullptr;    // the event that ended it; none: still held
  // released, failed (released, its run's command exited non-zero or was
  // ended by a signal), expired, forced, lost, killed; "held" while open. A
  // run that was killed or lost says so even when a release or expiry ended it.
  std::string outcome = "held";
  std::string by;  // who forced it, or released it from outside the holder's tree
};

struct Timeline {
  std::vector<Interval> intervals;                // by start
  std::vector<const store::HistoryEvent*> marks;  // skipped, timed_out, killed without a hold
};

// Pairs each acquired event with the event that ended its lease (same
// namespace, resource, owner and token). `events` may be in any order; the
// result points into it.
Timeline build_timeline(const std::vector<store::HistoryEvent>& events);

// /timeline.json: {"now", "from", "truncated", "intervals": [...], "marks": [...]}.
// Times are ISO 8601 (as in history) and epoch milliseconds (_ms).
std::string timeline_json(const Timeline& timeline, lock::Instant now, lock::Instant from,
                          bool truncated);

}  // namespace clk::serve
