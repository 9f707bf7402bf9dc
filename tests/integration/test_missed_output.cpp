// The output contracts of missed runs (suite "output contracts"): `status
// --format json` with expected resources and `clock missed --format json`
// validate against their JSON Schemas (python3-jsonschema), and every metric
// the shipped Grafana dashboard queries is one `clock status --format
// prometheus` exports.
#include <regex>
#include <set>
#include <string>
#include <thread>

#include <doctest/doctest.h>

#include "harness.hpp"

using namespace clk::test;

namespace {

Result validate_missed_output(const TestEnv& env, const std::string& schema_name,
                              const std::string& document, const std::string& file) {
  write_file(env.path(file), document);
  const char* python = std::getenv("CLOCK_TEST_PYTHON");
  return run(env.command({python && *python ? python : "/usr/bin/python3",
                          std::string(CLOCK_TEST_HELPERS_DIR) + "/validate_json.py",
                          std::string(CLOCK_TEST_SCHEMA_DIR) + "/" + schema_name + ".schema.json",
                          env.path(file).string()}),
             env.path("output"));
}

}  // namespace

TEST_SUITE("output contracts") {
  TEST_CASE("status and missed --format json with expected runs validate against their schemas") {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"run", "-r", "ok.job", "--every", "1h", "--", "true"}), 0);
    // Periods of a second, the shortest --every takes.
    REQUIRE_EXIT(env.clock({"run", "-r", "late", "--once-per", "1s", "--", "true"}), 0);
    REQUIRE_EXIT(
        env.clock({"--namespace", "dc-eu1", "run", "-r", "never", "--every", "1s", "--", "false"}),
        1);
    std::this_thread::sleep_for(2100ms);
    Result status = env.clock({"status", "--format", "json"});
    REQUIRE(status.status == 1);  // nothing held
    INFO(status.out);
    CHECK(nlohmann::json::parse(status.out)["expected"].size() == 3);
    CHECK_EXIT(validate_missed_output(env, "status", status.out, "status.json"), 0);
    Result missed = env.clock({"missed", "--since", "1h", "--format", "json"});
    CHECK_EXIT(missed, 2);
    INFO(missed.out);
    CHECK_EXIT(validate_missed_output(env, "missed", missed.out, "missed.json"), 0);
    // Each declaration is history (period_changed), in the history schema.
    Result history = env.clock({"--namespace", "dc-eu1", "history", "--format", "json"});
    REQUIRE_EXIT(history, 0);
    CHECK(history.out.find("\"period_changed\"") != std::string::npos);
    CHECK_EXIT(validate_missed_output(env, "history", history.out, "history.json"), 0);
    Result none = env.clock({"missed", "nothing.here", "--format", "json"});
    CHECK_EXIT(none, 0);
    CHECK_EXIT(validate_missed_output(env, "missed", none.out, "missed-empty.json"), 0);
  }

  TEST_CASE("every metric of the shipped Grafana dashboard is one clock exports") {
    TestEnv env;
    Result metrics = env.clock({"status", "--format", "prometheus"});
    REQUIRE_EXIT(metrics, 0);
    std::set<std::string> exported;
    std::regex type_line("(^|\n)# TYPE (clock_[a-z_]+) ");
    for (std::sregex_iterator it(metrics.out.begin(), metrics.out.end(), type_line), end; it != end;
         ++it)
      exported.insert((*it)[2]);
    std::string dashboard =
        read_file(std::string(CLOCK_TEST_SCHEMA_DIR) + "/../grafana/clock-dashboard.json");
    std::regex metric("clock_[a-z_]+");
    std::set<std::string> queried;
    for (std::sregex_iterator it(dashboard.begin(), dashboard.end(), metric), end; it != end;
         ++it) {
      std::string name = it->str();
      if (name != "clock_dashboard")
        queried.insert(name);
    }
    REQUIRE(queried.size() >= 6);
    for (const auto& name : queried) {
      CAPTURE(name);
      CHECK(exported.count(name) == 1);
    }
  }
}
