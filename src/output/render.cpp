// Text, JSON and shell renderings of grants, status, history and gc reports.
// JSON is built with nlohmann::json so that every string is escaped correctly.
#include "output/render.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <tuple>

#include <nlohmann/json.hpp>

#include "output/colour.hpp"
#include "output/expected_render.hpp"
#include "output/text.hpp"
#include "store/leftovers_json.hpp"
#include "util/duration.hpp"

namespace clk::output {

namespace {

using json = nlohmann::ordered_json;
using namespace std::chrono;

std::int64_t ms_between(lock::Instant from, lock::Instant to) {
  return duration_cast<milliseconds>(to - from).count();
}

std::string tokens_joined(const std::vector<store::Grant>& grants) {
  std::string out;
  for (const auto& grant : grants) {
    if (!out.empty())
      out += ",";
    out += std::to_string(grant.token);
  }
  return out;
}

// The facts a caller claims, and the database login that wrote the row
// (db_user, null where it is not known: rows from before it was kept).
json owner_json(const lock::OwnerInfo& info) {
  return {{"host", info.host},
          {"ip", info.ip},
          {"pid", info.pid},
          {"user", info.user},
          {"command", info.command},
          {"db_user", info.db_user.empty() ? json(nullptr) : json(info.db_user)}};
}

// The LOGIN column: the database login behind a row, "-" where not known.
std::string login_cell(const lock::OwnerInfo& info) {
  return info.db_user.empty() ? "-" : escape_for_terminal(info.db_user);
}

// The processes a holder's command left that still run (status): what
// --leftovers wait keeps the lock for.
std::vector<lock::Leftover> still_running(const std::vector<lock::Leftover>& leftovers) {
  std::vector<lock::Leftover> out;
  for (const auto& leftover : leftovers) {
    if (leftover.fate == lock::LeftoverFate::running)
      out.push_back(leftover);
  }
  return out;
}

json lease_json(const lock::Lease& lease, lock::Instant now, bool expired) {
  json out = {{"namespace", lease.ns},      {"resource", lease.resource.str()},
              {"owner", lease.owner.str()}, {"mode", lock::to_string(lease.mode)},
              {"slots", lease.slots},       {"token", lease.token},
              {"depth", lease.depth}};
  out.update(owner_json(lease.info));
  out["acquired_at"] = iso8601(lease.acquired_at);
  out["renewed_at"] = iso8601(lease.renewed_at);
  out["expires_at"] = lease.expires_at ? json(iso8601(*lease.expires_at)) : json(nullptr);
  out["held_for_ms"] = ms_between(lease.acquired_at, now);
  out["expires_in_ms"] =
      lease.expires_at ? json(ms_between(now, *lease.expires_at)) : json(nullptr);
  out["expired"] = expired;
  out["leftovers"] = json::array();
  for (const auto& leftover : still_running(lease.leftovers))
    out["leftovers"].push_back({{"pid", leftover.pid}, {"command", leftover.command}});
  return out;
}

json waiter_json(const lock::Waiter& waiter, lock::Instant now) {
  json out = {{"namespace", waiter.ns},      {"resource", waiter.resource.str()},
              {"owner", waiter.owner.str()}, {"mode", lock::to_string(waiter.mode)},
              {"slots", waiter.slots},       {"position", waiter.position}};
  out.update(owner_json(waiter.info));
  out["since"] = iso8601(waiter.since);
  out["waited_ms"] = ms_between(waiter.since, now);
  return out;
}

std::string mode_cell(lock::Mode mode, int slots) {
  std::string text(lock::to_string(mode));
  return slots > 0 ? "semaphore/" + std::to_string(slots) : text;
}

std::string render_prometheus(const store::Snapshot& snapshot);  // below

// The namespace is stored text like host and command: a direct SQL call can
// store one that --namespace would refuse (ESC, a newline), shown, never obeyed.
std::string resource_cell(const std::string& ns, const lock::Resource& resource) {
  return ns.empty() ? resource.str() : escape_for_terminal(ns) + ":" + resource.str();
}

// Each waiter's place in line for its own resource, 1 first (the waiters
// come in queue order; `position` is a global sequence number, not a place).
std::vector<int> places_in_line(const std::vector<lock::Waiter>& waiters) {
  std::map<std::pair<std::string, std::string>, int> seen;
  std::vector<int> places;
  for (const auto& waiter : waiters)
    places.push_back(++seen[{waiter.ns, waiter.resource.str()}]);
  return places;
}

std::string expires_cell(const lock::Lease& lease, lock::Instant now) {
  if (!lease.expires_at)
    return "never";
  auto left = milliseconds(ms_between(now, *lease.expires_at));
  return left.count() > 0 ? "in " + util::format_duration(left)
                          : "expired " + util::format_duration(-left) + " ago";
}

// "held", or "held (leftovers: 4242, 4243)" while the lock waits for what
// the command left.
std::string holder_state(const lock::Lease& lease, bool expired) {
  std::string state = expired ? "expired" : "held";
  std::string pids;
  for (const auto& leftover : still_running(lease.leftovers))
    pids += (pids.empty() ? "" : ", ") + std::to_string(leftover.pid);
  return pids.empty() ? state : state + " (leftovers: " + pids + ")";
}

std::vector<std::string> holder_row(const lock::Lease& lease, bool expired, lock::Instant now) {
  return {resource_cell(lease.ns, lease.resource),
          holder_state(lease, expired),
          mode_cell(lease.mode, lease.slots),
          lease.owner.str(),
          escape_for_terminal(lease.info.host),
          escape_for_terminal(lease.info.ip.empty() ? "-" : lease.info.ip),
          std::to_string(lease.info.pid),
          escape_for_terminal(lease.info.user),
          login_cell(lease.info),
          std::to_string(lease.token),
          util::format_duration(milliseconds(ms_between(lease.acquired_at, now))),
          expires_cell(lease, now),
          escape_for_terminal(lease.info.command)};
}

std::vector<std::string> waiter_row(const lock::Waiter& waiter, int place, lock::Instant now) {
  return {resource_cell(waiter.ns, waiter.resource),
          "waiting #" + std::to_string(place),
          mode_cell(waiter.mode, waiter.slots),
          waiter.owner.str(),
          escape_for_terminal(waiter.info.host),
          escape_for_terminal(waiter.info.ip.empty() ? "-" : waiter.info.ip),
          std::to_string(waiter.info.pid),
          escape_for_terminal(waiter.info.user),
          login_cell(waiter.info),
          "-",
          util::format_duration(milliseconds(ms_between(waiter.since, now))),
          "-",
          escape_for_terminal(waiter.info.command)};
}

// One line per holder and per waiter, grouped by resource: its holders first,
// then its waiters in queue order. Colour (a terminal without NO_COLOR) marks
// the STATE column and the header.
std::string status_table(const store::Snapshot& snapshot, bool colour) {
  if (snapshot.holders.empty() && snapshot.waiters.empty())
    return "no locks held\n";
  struct Line {
    std::string ns, resource;
    std::vector<std::string> cells;
    std::string_view colour;
  };
  std::vector<Line> lines;
  for (std::size_t i = 0; i < snapshot.holders.size(); ++i) {
    const auto& lease = snapshot.holders[i];
    bool expired = i < snapshot.holder_expired.size() && snapshot.holder_expired[i];
    lines.push_back({lease.ns, lease.resource.str(), holder_row(lease, expired, snapshot.now),
                     expired ? k_colour_expired : k_colour_held});
  }
  auto places = places_in_line(snapshot.waiters);
  for (std::size_t i = 0; i < snapshot.waiters.size(); ++i) {
    const auto& waiter = snapshot.waiters[i];
    lines.push_back({waiter.ns, waiter.resource.str(), waiter_row(waiter, places[i], snapshot.now),
                     k_colour_waiting});
  }
  // Stable: holders stay before waiters, and waiters in queue order.
  std::stable_sort(lines.begin(), lines.end(), [](const Line& a, const Line& b) {
    return std::tie(a.ns, a.resource) < std::tie(b.ns, b.resource);
  });
  std::vector<std::vector<std::string>> rows;
  for (const auto& line : lines)
    rows.push_back(line.cells);
  constexpr std::size_t k_state_column = 1;
  CellColour paint;
  if (colour) {
    paint = [&lines](std::size_t row, std::size_t column) -> std::string_view {
      if (row == 0)
        return k_colour_header;
      return column == k_state_column ? lines[row - 1].colour : std::string_view();
    };
  }
  return table({"RESOURCE", "STATE", "MODE", "OWNER", "HOST", "IP", "PID", "USER", "LOGIN", "TOKEN",
                "FOR", "EXPIRES", "COMMAND"},
               rows, paint);
}

// `value` as dump(2) writes it nested `depth` spaces deep, after its key:
// every line but the first moves right (a JSON string holds no raw newline).
std::string dump_indented(const json& value, int depth) {
  std::string text = value.dump(2, ' ', false, json::error_handler_t::replace);
  const std::string shift = "\n" + std::string(static_cast<std::size_t>(depth), ' ');
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\n')
      out += shift;
    else
      out += c;
  }
  return out;
}

// Room for a list of `count` items as long as its first, and a quarter more,
// reserved before the rest are appended: a text grown by doubling holds its
// old and new copies at once (4 + 8 MiB for 10,000 holders), while reserved
// room costs nothing until it is written (the kernel maps pages on first use).
void reserve_for_list(std::string& out, std::size_t first_size, std::size_t count) {
  out.reserve(out.size() + first_size * count + first_size * count / 4);
}

// A member's array of `count` items, as dump(2) writes it at depth 2 of the
// top-level object, each item made by `item(i)` and dumped at once.
template <typename Item>
void append_list(std::string& out, std::size_t count, Item item) {
  if (count == 0) {
    out += "[]";
    return;
  }
  out += "[\n";
  for (std::size_t i = 0; i < count; ++i) {
    if (i > 0)
      out += ",\n";
    std::string text = "    " + dump_indented(item(i), 4);
    if (i == 0)
      reserve_for_list(out, text.size(), count);
    out += text;
  }
  out += "\n  ]";
}

// The text json::dump(2) writes for {"now", "holders", "waiters",
// "expected"}, written one holder and one waiter at a time: the JSON tree of
// 10,000 holders took several times the text's memory (75 MiB).
// `holder_written(i)`, if set, is called once holder i is in the text.
std::string status_json(const store::Snapshot& snapshot,
                        const std::function<void(std::size_t)>& holder_written) {
  std::string out =
      "{\n  \"now\": " + dump_indented(json(iso8601(snapshot.now)), 2) + ",\n  \"holders\": ";
  append_list(out, snapshot.holders.size(), [&](std::size_t i) {
    bool expired = i < snapshot.holder_expired.size() && snapshot.holder_expired[i];
    json holder = lease_json(snapshot.holders[i], snapshot.now, expired);
    if (holder_written)
      holder_written(i);
    return holder;
  });
  out += ",\n  \"waiters\": ";
  auto places = places_in_line(snapshot.waiters);
  append_list(out, snapshot.waiters.size(), [&](std::size_t i) {
    json waiter = waiter_json(snapshot.waiters[i], snapshot.now);
    waiter["place"] = places[i];
    return waiter;
  });
  if (snapshot.expected)
    out += ",\n  \"expected\": " + dump_indented(expected_json(*snapshot.expected), 2);
  // Appended, not `out + …`: that would copy the whole text once more.
  out += "\n}\n";
  return out;
}

}  // namespace

// Only the shell format, which eval turns into CLOCK_OWNER, carries the
// secret: text and JSON name the owner by its public id (man clock, DESCRIPTION).
std::string render_grants(const lock::OwnerCredential& owner,
                          const std::vector<store::Grant>& grants, Format format) {
  if (format == Format::json) {
    json list = json::array();
    for (const auto& grant : grants) {
      list.push_back(
          {{"resource", grant.resource.str()}, {"token", grant.token}, {"depth", grant.depth}});
    }
    json out = {{"owner", owner.id.str()},
                {"token", grants.empty() ? 0 : grants.front().token},
                {"grants", list}};
    return out.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  }
  if (format == Format::shell) {
    // ID.SECRET is a UUID, a dot and hex digits, tokens are digits: nothing
    // here needs shell quoting.
    return "export CLOCK_OWNER=" + owner.str() + " CLOCK_TOKEN=" + tokens_joined(grants) + "\n";
  }
  std::string out = "owner " + owner.id.str() + "\n";
  for (const auto& grant : grants) {
    out += grant.resource.str() + " token " + std::to_string(grant.token);
    if (grant.depth > 1)
      out += " (re-entered, depth " + std::to_string(grant.depth) + ")";
    out += "\n";
  }
  return out;
}

std::string render_status(const store::Snapshot& snapshot, Format format, bool colour) {
  if (format == Format::prometheus) {
    std::string out = render_prometheus(snapshot);
    if (snapshot.expected)
      out += expected_prometheus(*snapshot.expected);
    return out;
  }
  if (format == Format::json)
    return status_json(snapshot, nullptr);
  return status_table(snapshot, colour) +
         (snapshot.expected ? expected_table(*snapshot.expected) : "");
}

std::string render_status_json_draining(store::Snapshot& snapshot,
                                        const std::function<void()>& every_thousand) {
  return status_json(snapshot, [&](std::size_t i) {
    // Moved out and destroyed here: its strings are freed as the text grows.
    [[maybe_unused]] lock::Lease written = std::move(snapshot.holders[i]);
    if (every_thousand && i % 1000 == 999)
      every_thousand();
  });
}

namespace {

struct ResourceMetrics {
  int holders = 0;
  double oldest_age_seconds = 0;
  std::optional<double> soonest_expiry_seconds;
  int waiters = 0;
};

// One counter per resource and outcome, from counts that gc does not prune,
// so a rate() over it never sees a reset that did not happen.
// succeeded and failed count how clock run's commands ended (exit 0; any
// other exit or a signal), beside the outcomes of the lock.
std::string runs_total(const std::vector<store::RunCount>& run_counts,
                       const std::vector<store::RunResults>& run_results) {
  std::string out =
      "# HELP clock_runs_total Runs of the resource by outcome (acquired, skipped, timed_out, "
      "lost, killed, forced; succeeded and failed: how clock run's command ended).\n"
      "# TYPE clock_runs_total counter\n";
  auto line = [&](const std::string& ns, const lock::Resource& resource, std::string_view outcome,
                  std::int64_t count) {
    out += "clock_runs_total{namespace=\"" + prometheus_label_value(ns) + "\",resource=\"" +
           prometheus_label_value(resource.str()) + "\",outcome=\"" + std::string(outcome) +
           "\"} " + std::to_string(count) + "\n";
  };
  for (const auto& run : run_counts)
    line(run.ns, run.resource, store::to_string(run.outcome), run.count);
  for (const auto& results : run_results) {
    line(results.ns, results.resource, "succeeded", results.succeeded);
    line(results.ns, results.resource, "failed", results.failed);
  }
  return out;
}

// How each resource's latest run of clock run ended: its exit status (a
// signal N as the shell reports it, 128+N) and how long its lease was held.
std::string last_runs(const std::vector<store::RunResults>& run_results) {
  std::string status =
      "# HELP clock_last_exit_status Exit status of the resource's latest run (128+N for a "
      "command ended by signal N).\n"
      "# TYPE clock_last_exit_status gauge\n";
  std::string duration =
      "# HELP clock_last_run_duration_seconds How long the resource's latest run held its "
      "lease.\n"
      "# TYPE clock_last_run_duration_seconds gauge\n";
  for (const auto& results : run_results) {
    const std::string labels = "{namespace=\"" + prometheus_label_value(results.ns) +
                               "\",resource=\"" + prometheus_label_value(results.resource.str()) +
                               "\"} ";
    const auto& exit = results.last_exit;
    status += "clock_last_exit_status" + labels +
              std::to_string(exit.code ? *exit.code : 128 + exit.signal) + "\n";
    char seconds[64];
    std::snprintf(seconds, sizeof seconds, "%.3f", results.last_held_for.count() / 1000.0);
    duration += "clock_last_run_duration_seconds" + labels + seconds + "\n";
  }
  return status + duration;
}

std::string render_prometheus(const store::Snapshot& snapshot) {
  std::map<std::pair<std::string, std::string>, ResourceMetrics> metrics;
  for (const auto& lease : snapshot.holders) {
    auto& m = metrics[{lease.ns, lease.resource.str()}];
    ++m.holders;
    m.oldest_age_seconds =
        std::max(m.oldest_age_seconds, ms_between(lease.acquired_at, snapshot.now) / 1000.0);
    if (lease.expires_at) {
      double left = ms_between(snapshot.now, *lease.expires_at) / 1000.0;
      m.soonest_expiry_seconds = std::min(m.soonest_expiry_seconds.value_or(left), left);
    }
  }
  for (const auto& waiter : snapshot.waiters)
    ++metrics[{waiter.ns, waiter.resource.str()}].waiters;
  struct Family {
    const char* name;
    const char* help;
    std::function<std::optional<double>(const ResourceMetrics&)> value;
  };
  const Family families[] = {
      {"clock_lock_holders", "Live leases held on the resource.",
       [](const ResourceMetrics& m) { return std::optional<double>(m.holders); }},
      {"clock_lease_age_seconds", "Age of the oldest live lease on the resource.",
       [](const ResourceMetrics& m) {
         return m.holders ? std::optional(m.oldest_age_seconds) : std::nullopt;
       }},
      {"clock_lease_expires_in_seconds", "Seconds until the soonest lease on the resource expires.",
       [](const ResourceMetrics& m) { return m.soonest_expiry_seconds; }},
      {"clock_waiters", "Requests queued for the resource.",
       [](const ResourceMetrics& m) { return std::optional<double>(m.waiters); }},
  };
  std::string out;
  for (const auto& family : families) {
    out += std::string("# HELP ") + family.name + " " + family.help + "\n";
    out += std::string("# TYPE ") + family.name + " gauge\n";
    for (const auto& [key, m] : metrics) {
      auto value = family.value(m);
      if (!value)
        continue;
      char number[64];
      std::snprintf(number, sizeof number, "%.3f", *value);
      out += std::string(family.name) + "{namespace=\"" + prometheus_label_value(key.first) +
             "\",resource=\"" + prometheus_label_value(key.second) + "\"} " + number + "\n";
    }
  }
  out += runs_total(snapshot.run_counts, snapshot.run_results);
  out += last_runs(snapshot.run_results);
  return out;
}

}  // namespace

std::string render_history(const std::vector<store::HistoryEvent>& events, Format format) {
  if (format == Format::json) {
    json list = json::array();
    for (const auto& event : events) {
      json item = {{"id", event.id},
                   {"at", iso8601(event.at)},
                   {"event", store::to_string(event.kind)},
                   {"namespace", event.ns},
                   {"resource", event.resource.str()},
                   {"owner", event.owner.str()},
                   {"mode", lock::to_string(event.mode)},
                   {"token", event.token}};
      item.update(owner_json(event.info));
      item["held_for_ms"] = event.held_for ? json(event.held_for->count()) : json(nullptr);
      item["exit_code"] = event.exit && event.exit->code ? json(*event.exit->code) : json(nullptr);
      item["signal"] =
          event.exit && !event.exit->code ? json(store::describe(*event.exit)) : json(nullptr);
      item["by"] = event.by.empty() ? json(nullptr) : json(event.by);
      item["in_the_way"] = json(nullptr);
      if (const auto& way = event.in_the_way) {
        item["in_the_way"] = {{"owner", way->owner.str()},
                              {"host", way->host},
                              {"token", way->token ? json(*way->token) : json(nullptr)}};
      }
      item["leftovers"] = json::array();
      for (const auto& leftover : event.leftovers) {
        item["leftovers"].push_back({{"pid", leftover.pid},
                                     {"command", leftover.command},
                                     {"fate", store::to_string(leftover.fate)}});
      }
      item["done_by"] = json(nullptr);
      if (const auto& run = event.done_by) {
        item["done_by"] = {{"owner", run->owner.str()},
                           {"host", run->host},
                           {"token", run->token},
                           {"started_at", iso8601(run->started)}};
      }
      item["every_ms"] = event.every ? json(event.every->count()) : json(nullptr);
      item["previous_every_ms"] =
          event.previous_every ? json(event.previous_every->count()) : json(nullptr);
      list.push_back(item);
    }
    return json{{"events", list}}.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  }
  if (events.empty())
    return "no history\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& event : events) {
    std::string what(store::to_string(event.kind));
    if (event.exit)
      what += " (" + store::describe(*event.exit) + ")";
    if (!event.by.empty())
      what += " by " + escape_for_terminal(event.by);
    if (const auto& way = event.in_the_way) {
      what += " (held by " + escape_for_terminal(way->host);
      what += way->token              ? ", token " + std::to_string(*way->token) + ")"
              : way->is_transaction() ? ")"
                                      : ", queued)";
    }
    if (!event.leftovers.empty()) {
      std::string left;
      for (const auto& leftover : event.leftovers) {
        left += (left.empty() ? "" : ", ") + std::to_string(leftover.pid) + " " +
                (leftover.fate == lock::LeftoverFate::waited
                     ? "waited for"
                     : std::string(store::to_string(leftover.fate)));
      }
      what += " (left " + left + ")";
    }
    if (const auto& every = event.every) {
      what += " (every " + util::format_duration(*every) +
              (event.previous_every ? ", was " + util::format_duration(*event.previous_every)
                                    : std::string()) +
              ")";
    }
    if (const auto& run = event.done_by) {
      what += " (done by " + escape_for_terminal(run->host) + ", token " +
              std::to_string(run->token) + ", started " + iso8601(run->started) + ")";
    }
    rows.push_back({iso8601(event.at), what, resource_cell(event.ns, event.resource),
                    escape_for_terminal(event.info.host), std::to_string(event.info.pid),
                    login_cell(event.info), std::to_string(event.token),
                    event.held_for ? util::format_duration(*event.held_for) : "-",
                    escape_for_terminal(event.info.command)});
  }
  return table({"AT", "EVENT", "RESOURCE", "HOST", "PID", "LOGIN", "TOKEN", "HELD", "COMMAND"},
               rows);
}

std::string render_gc(const store::GcReport& report, bool dry_run) {
  std::string verb = dry_run ? "would remove " : "removed ";
  return verb + std::to_string(report.expired_leases) + " expired lease(s), " +
         std::to_string(report.dead_waiters) + " dead waiter(s), " +
         std::to_string(report.history_rows) + " history row(s), " +
         std::to_string(report.idle_counters) + " idle run counter(s)\n";
}

}  // namespace clk::output
