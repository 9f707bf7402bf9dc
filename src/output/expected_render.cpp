// Renderings of expected resources and missed periods (expected_render.hpp).
#include "output/expected_render.hpp"

#include <cstdio>

#include "output/text.hpp"
#include "store/expected.hpp"
#include "util/duration.hpp"

namespace clk::output {

namespace {

using json = nlohmann::ordered_json;
using namespace std::chrono;

std::string resource_cell(const store::ExpectedRun& run) {
  return run.ns.empty() ? run.resource.str()
                        : escape_for_terminal(run.ns) + ":" + run.resource.str();
}

// "5m ago" / "in 5m" beside an instant, against the database's now.
std::string relative(lock::Instant at, lock::Instant now) {
  auto ms = duration_cast<milliseconds>(now - at);
  if (ms >= milliseconds(0))
    return util::format_duration(duration_cast<milliseconds>(ms / 1000 * 1000)) + " ago";
  return "in " + util::format_duration(duration_cast<milliseconds>(-ms / 1000 * 1000));
}

std::string seconds_text(double seconds) {
  char number[64];
  std::snprintf(number, sizeof number, "%.3f", seconds);
  return number;
}

double epoch_seconds(lock::Instant at) {
  return duration_cast<milliseconds>(at.time_since_epoch()).count() / 1000.0;
}

json instant_or_null(const std::optional<lock::Instant>& at) {
  return at ? json(iso8601(*at)) : json(nullptr);
}

json run_json(const store::ExpectedRun& run, lock::Instant now) {
  const auto due = store::due_at(run);
  return {{"namespace", run.ns},
          {"resource", run.resource.str()},
          {"every_ms", run.every.count()},
          {"declared_at", iso8601(run.declared_at)},
          {"last_success", instant_or_null(store::last_success(run))},
          {"due_at", iso8601(due)},
          {"overdue", store::overdue(run, now)},
          {"overdue_ms", now >= due ? duration_cast<milliseconds>(now - due).count() : 0}};
}

}  // namespace

std::string expected_table(const store::ExpectedRuns& expected) {
  if (expected.runs.empty())
    return "";
  std::vector<std::vector<std::string>> rows;
  for (const auto& run : expected.runs) {
    auto last = store::last_success(run);
    auto due = store::due_at(run);
    bool late = store::overdue(run, expected.now);
    rows.push_back({resource_cell(run), util::format_duration(run.every),
                    last ? iso8601(*last) + " (" + relative(*last, expected.now) + ")" : "never",
                    iso8601(due) + " (" + relative(due, expected.now) + ")",
                    late ? "OVERDUE" : "ok"});
  }
  return "\nexpected runs:\n" + table({"RESOURCE", "EVERY", "LAST SUCCESS", "DUE", "STATE"}, rows);
}

json expected_json(const store::ExpectedRuns& expected) {
  json list = json::array();
  for (const auto& run : expected.runs)
    list.push_back(run_json(run, expected.now));
  return list;
}

std::string expected_prometheus(const store::ExpectedRuns& expected) {
  struct Family {
    const char* name;
    const char* help;
  };
  const Family last{"clock_last_success_timestamp_seconds",
                    "Start of the latest successful run of the resource (its command exited 0), "
                    "on the database's clock."};
  const Family interval{"clock_expected_interval_seconds",
                        "The resource's expected period (clock run --once-per or --every)."};
  const Family late{"clock_run_overdue",
                    "1 if no successful run of the resource started within its expected period."};
  std::string out;
  for (const auto* family : {&last, &interval, &late}) {
    out += std::string("# HELP ") + family->name + " " + family->help + "\n";
    out += std::string("# TYPE ") + family->name + " gauge\n";
    for (const auto& run : expected.runs) {
      std::string value;
      if (family == &last) {
        auto at = store::last_success(run);
        if (!at)
          continue;
        value = seconds_text(epoch_seconds(*at));
      } else if (family == &interval) {
        value = seconds_text(run.every.count() / 1000.0);
      } else {
        // Built, not assigned from the literal: GCC 12 at -O2 with
        // _FORTIFY_SOURCE (the package build) warns falsely on the assignment.
        value = std::string(store::overdue(run, expected.now) ? "1" : "0");
      }
      out += std::string(family->name) + "{namespace=\"" + prometheus_label_value(run.ns) +
             "\",resource=\"" + prometheus_label_value(run.resource.str()) + "\"} " + value + "\n";
    }
  }
  return out;
}

std::string render_missed(const store::ExpectedRuns& expected, lock::Instant since, Format format) {
  if (format == Format::json) {
    json resources = json::array();
    for (const auto& run : expected.runs) {
      auto missed = store::missed_periods(run, since, expected.now);
      json item = run_json(run, expected.now);
      item["missed"] = missed.missed;
      json periods = json::array();
      for (const auto& period : missed.periods) {
        periods.push_back({{"from", iso8601(period.from)},
                           {"to", iso8601(period.to)},
                           {"state", period.open ? "overdue" : "missed"}});
      }
      item["periods"] = periods;
      resources.push_back(item);
    }
    json out = {
        {"now", iso8601(expected.now)}, {"since", iso8601(since)}, {"resources", resources}};
    return out.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& run : expected.runs) {
    auto last = store::last_success(run);
    std::string last_cell = last ? iso8601(*last) : "never";
    for (const auto& period : store::missed_periods(run, since, expected.now).periods) {
      rows.push_back({resource_cell(run), util::format_duration(run.every), iso8601(period.from),
                      period.open ? "-" : iso8601(period.to), period.open ? "OVERDUE" : "missed",
                      last_cell});
    }
  }
  if (rows.empty())
    return "no missed runs since " + iso8601(since) + " (" + std::to_string(expected.runs.size()) +
           " expected resource" + (expected.runs.size() == 1 ? "" : "s") + ")\n";
  return table({"RESOURCE", "EVERY", "FROM", "TO", "STATE", "LAST SUCCESS"}, rows);
}

}  // namespace clk::output
