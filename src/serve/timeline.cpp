// Intervals from history: one pass over the events in id order (the order
// they were recorded), with the open holds keyed by their lease.
#include "serve/timeline.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "output/text.hpp"

namespace clk::serve {

namespace {

using Key = std::tuple<std::string, std::string, std::string, lock::Token>;
using OwnerKey = std::tuple<std::string, std::string, std::string>;

Key key_of(const store::HistoryEvent& event) {
  return {event.ns, event.resource.str(), event.owner.str(), event.token};
}

OwnerKey owner_key_of(const store::HistoryEvent& event) {
  return {event.ns, event.resource.str(), event.owner.str()};
}

// A later, more telling event upgrades how a hold ended: a lost lease is
// often first removed as expired by the next acquirer, a killed run is
// released by clock after it stopped the command. A forced release is not
// upgraded to lost: the holder's next renewal finds its lease gone and
// records it lost, but the cause was the force.
int weight(std::string_view outcome) {
  if (outcome == "killed")
    return 6;
  if (outcome == "forced")
    return 5;
  if (outcome == "lost")
    return 4;
  if (outcome == "expired")
    return 3;
  if (outcome == "failed")
    return 2;
  if (outcome == "released")
    return 1;
  return 0;
}

// How an ending event tells the hold ended: a release whose run's command
// failed (an exit code other than 0, or a signal) is `failed`.
std::string outcome_of(const store::HistoryEvent& event) {
  if (event.kind == store::EventKind::released && event.exit && !event.exit->succeeded())
    return "failed";
  return std::string(store::to_string(event.kind));
}

void upgrade(Interval& interval, std::string_view outcome) {
  if (weight(outcome) > weight(interval.outcome))
    interval.outcome = std::string(outcome);
}

long long epoch_ms(lock::Instant instant) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(instant.time_since_epoch()).count();
}

nlohmann::ordered_json time_json(const store::HistoryEvent* event) {
  return event ? nlohmann::ordered_json(output::iso8601(event->at)) : nlohmann::ordered_json();
}

nlohmann::ordered_json ms_json(const store::HistoryEvent* event) {
  return event ? nlohmann::ordered_json(epoch_ms(event->at)) : nlohmann::ordered_json();
}

nlohmann::ordered_json who_json(const store::HistoryEvent& event) {
  return {{"owner", event.owner.str()},
          {"token", event.token},
          {"mode", lock::to_string(event.mode)},
          {"host", event.info.host},
          {"pid", event.info.pid},
          {"user", event.info.user},
          {"command", event.info.command}};
}

}  // namespace

Timeline build_timeline(const std::vector<store::HistoryEvent>& events) {
  std::vector<const store::HistoryEvent*> ordered;
  ordered.reserve(events.size());
  for (const auto& event : events)
    ordered.push_back(&event);
  std::sort(ordered.begin(), ordered.end(),
            [](const auto* a, const auto* b) { return a->id < b->id; });

  Timeline timeline;
  std::map<Key, std::size_t> open;           // lease → its interval
  std::map<Key, std::size_t> closed;         // lease → its interval, once ended
  std::map<OwnerKey, std::size_t> by_owner;  // the owner's latest hold of the resource
  auto add = [&](Interval interval, const store::HistoryEvent& event) {
    timeline.intervals.push_back(std::move(interval));
    by_owner[owner_key_of(event)] = timeline.intervals.size() - 1;
    return timeline.intervals.size() - 1;
  };
  for (const auto* event : ordered) {
    const auto kind = event->kind;
    if (kind == store::EventKind::acquired) {
      open[key_of(*event)] = add(Interval{event, nullptr, "held", ""}, *event);
    } else if (kind == store::EventKind::released || kind == store::EventKind::expired ||
               kind == store::EventKind::forced || kind == store::EventKind::lost) {
      const auto key = key_of(*event);
      if (auto it = open.find(key); it != open.end()) {
        auto& interval = timeline.intervals[it->second];
        interval.end = event;
        upgrade(interval, outcome_of(*event));
        if (!event->by.empty())
          interval.by = event->by;
        closed[key] = it->second;
        open.erase(it);
      } else if (auto done = closed.find(key); done != closed.end()) {
        upgrade(timeline.intervals[done->second], outcome_of(*event));
      } else if (kind != store::EventKind::lost || event->held_for) {
        // Held since before the first event read.
        closed[key] = add(Interval{nullptr, event, outcome_of(*event), event->by}, *event);
      }
    } else if (kind == store::EventKind::killed) {
      if (auto it = by_owner.find(owner_key_of(*event)); it != by_owner.end())
        upgrade(timeline.intervals[it->second], "killed");
      else
        timeline.marks.push_back(event);
    } else if (kind == store::EventKind::skipped || kind == store::EventKind::timed_out) {
      timeline.marks.push_back(event);
    }
  }
  return timeline;
}

std::string timeline_json(const Timeline& timeline, lock::Instant now, lock::Instant from,
                          bool truncated) {
  // Written item by item, not as one JSON tree: a tree of tens of
  // thousands of intervals costs several times the text in memory.
  auto dump = [](const nlohmann::ordered_json& value) {
    return value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  };
  nlohmann::ordered_json head;
  head["now"] = output::iso8601(now);
  head["now_ms"] = epoch_ms(now);
  head["from"] = output::iso8601(from);
  head["from_ms"] = epoch_ms(from);
  head["truncated"] = truncated;
  std::string out = dump(head);
  out.pop_back();  // the closing brace: the lists follow
  out += ",\"intervals\":[";
  bool first = true;
  for (const auto& interval : timeline.intervals) {
    const auto& any = interval.start ? *interval.start : *interval.end;
    nlohmann::ordered_json item;
    item["namespace"] = any.ns;
    item["resource"] = any.resource.str();
    item["outcome"] = interval.outcome;
    item["start"] = time_json(interval.start);
    item["start_ms"] = ms_json(interval.start);
    item["end"] = time_json(interval.end);
    item["end_ms"] = ms_json(interval.end);
    item.update(who_json(any));
    item["by"] =
        interval.by.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(interval.by);
    // How its run's command ended, where the ending event says (history's
    // exit_code and signal), and how long the lease was held.
    const auto* exit = interval.end && interval.end->exit ? &*interval.end->exit : nullptr;
    item["exit_code"] =
        exit && exit->code ? nlohmann::ordered_json(*exit->code) : nlohmann::ordered_json();
    item["signal"] = exit && !exit->code ? nlohmann::ordered_json(store::describe(*exit))
                                         : nlohmann::ordered_json();
    item["held_for_ms"] = interval.end && interval.end->held_for
                              ? nlohmann::ordered_json(interval.end->held_for->count())
                              : nlohmann::ordered_json();
    out += (first ? "" : ",") + dump(item);
    first = false;
  }
  out += "],\"marks\":[";
  first = true;
  for (const auto* event : timeline.marks) {
    nlohmann::ordered_json item;
    item["namespace"] = event->ns;
    item["resource"] = event->resource.str();
    item["kind"] = store::to_string(event->kind);
    item["at"] = output::iso8601(event->at);
    item["at_ms"] = epoch_ms(event->at);
    item.update(who_json(*event));
    item["in_the_way"] = nlohmann::ordered_json();
    if (event->in_the_way) {
      item["in_the_way"] = {
          {"owner", event->in_the_way->owner.str()},
          {"host", event->in_the_way->host},
          {"token", event->in_the_way->token ? nlohmann::ordered_json(*event->in_the_way->token)
                                             : nlohmann::ordered_json()}};
    }
    out += (first ? "" : ",") + dump(item);
    first = false;
  }
  out += "]}\n";
  return out;
}

}  // namespace clk::serve
