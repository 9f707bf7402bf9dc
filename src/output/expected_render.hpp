// Missed runs as shown to people and programs: the expected resources in
// `clock status` (a table section, a JSON member, Prometheus gauges) and the
// missed periods of `clock missed` (table or JSON, schema
// packaging/schema/missed.schema.json).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "output/render.hpp"
#include "store/store.hpp"

namespace clk::output {

// `clock status`'s section on expected resources ("" when there is none):
// resource, period, last success, when next due, and whether overdue.
std::string expected_table(const store::ExpectedRuns& expected);
// `clock status --format json`'s "expected" member.
nlohmann::ordered_json expected_json(const store::ExpectedRuns& expected);
// clock_last_success_timestamp_seconds, clock_expected_interval_seconds and
// clock_run_overdue, per namespace and resource.
std::string expected_prometheus(const store::ExpectedRuns& expected);

// `clock missed`: the periods since `since` that had no successful run, and
// those overdue now, as a table or JSON.
std::string render_missed(const store::ExpectedRuns& expected, lock::Instant since, Format format);

}  // namespace clk::output
