// Every run that ends is recorded with how it ended (man clock, HISTORY and
// METRICS): a `true`, an `exit 3` and a `kill -TERM $$` job are told apart
// in history (table and JSON), in clock_runs_total and the last-run gauges,
// each with its duration; --once-per counts only the run history calls
// succeeded; history --since and --host keep only what they name.
#include <map>
#include <set>
#include <string>

#include <doctest/doctest.h>

#include "harness.hpp"

using namespace clk::test;
using nlohmann::json;

namespace {

// The newest released event of each resource, from clock history --format json.
std::map<std::string, json> released_by_resource(const TestEnv& env) {
  Result history = env.clock({"history", "--event", "released", "--format", "json"});
  REQUIRE_EXIT(history, 0);
  std::map<std::string, json> out;
  const json reply = json::parse(history.out);  // outlives the loop (a temporary would not)
  for (const auto& event : reply["events"])
    out.emplace(event["resource"].get<std::string>(), event);  // newest first: the newest stays
  return out;
}

// The value of one sample of a gauge in a Prometheus exposition; "" if absent.
std::string gauge_sample(const std::string& exposition, const std::string& series) {
  auto at = exposition.find("\n" + series + " ");
  if (at == std::string::npos)
    return "";
  at += series.size() + 2;
  return exposition.substr(at, exposition.find('\n', at) - at);
}

// Runs the three jobs: one succeeds, one exits 3, one is ended by SIGTERM.
void run_three_jobs(const TestEnv& env) {
  CHECK_EXIT(env.clock({"run", "-r", "job.good", "--", "true"}), 0);
  CHECK_EXIT(env.clock({"run", "-r", "job.bad", "--", "sh", "-c", "exit 3"}), 3);
  CHECK_EXIT(env.clock({"run", "-r", "job.term", "--", "sh", "-c", "kill -TERM $$"}), 143);
}

}  // namespace

TEST_SUITE("run exits") {
  TEST_CASE("history tells a good run, an exit 3 and a SIGTERM apart, with durations") {
    TestEnv env;
    run_three_jobs(env);
    auto released = released_by_resource(env);
    INFO(json(released).dump(2));
    REQUIRE(released.size() == 3);
    CHECK(released["job.good"]["exit_code"] == 0);
    CHECK(released["job.good"]["signal"].is_null());
    CHECK(released["job.bad"]["exit_code"] == 3);
    CHECK(released["job.bad"]["signal"].is_null());
    CHECK(released["job.term"]["exit_code"].is_null());
    CHECK(released["job.term"]["signal"] == "SIGTERM");
    for (const auto& [resource, event] : released)
      CHECK(event["held_for_ms"].is_number_integer());

    // Only a release by clock run carries an exit: a grant's record, and a
    // release by clock release, have none.
    Acquired held = env.acquire({"-r", "job.plain"});
    CHECK_EXIT(env.clock({"release", "-r", "job.plain", "--owner", held.credential}), 0);
    Result all = env.clock({"history", "--format", "json", "--limit", "100"});
    REQUIRE_EXIT(all, 0);
    const json every = json::parse(all.out);
    for (const auto& event : every["events"]) {
      if (event["event"] != "released" || event["resource"] == "job.plain") {
        CHECK(event["exit_code"].is_null());
        CHECK(event["signal"].is_null());
      }
    }

    Result table = env.clock({"history"});
    REQUIRE_EXIT(table, 0);
    INFO(table.out);
    CHECK(table.out.find("released (exit 0)") != std::string::npos);
    CHECK(table.out.find("released (exit 3)") != std::string::npos);
    CHECK(table.out.find("released (SIGTERM)") != std::string::npos);
  }

  TEST_CASE("a run holding several resources records its exit on each one's release") {
    TestEnv env;
    CHECK_EXIT(env.clock({"run", "-r", "pair.a", "-r", "pair.b", "--", "sh", "-c", "exit 4"}), 4);
    CHECK_EXIT(env.clock({"run", "-r", "pair.a", "-r", "pair.b", "--", "true"}), 0);
    auto released = released_by_resource(env);
    INFO(json(released).dump(2));
    for (const std::string resource : {"pair.a", "pair.b"}) {
      CHECK(released[resource]["exit_code"] == 0);
      Result both = env.clock({"history", resource, "--event", "released", "--format", "json"});
      REQUIRE_EXIT(both, 0);
      const json events = json::parse(both.out)["events"];
      REQUIRE(events.size() == 2);
      CHECK(events[1]["exit_code"] == 4);  // newest first
    }
    Result metrics = env.clock({"status", "--format", "prometheus"});
    REQUIRE(metrics.status <= 1);  // 1: nothing held now
    INFO(metrics.out);
    auto runs = runs_total(metrics.out);
    for (const std::string resource : {"pair.a", "pair.b"}) {
      CHECK(runs["/" + resource + "/succeeded"] == 1);
      CHECK(runs["/" + resource + "/failed"] == 1);
    }
  }

  TEST_CASE("metrics count failed runs apart from good ones, with each last exit and duration") {
    TestEnv env;
    run_three_jobs(env);
    CHECK_EXIT(env.clock({"run", "-r", "job.good", "--", "true"}), 0);
    Result metrics = env.clock({"status", "--format", "prometheus"});
    REQUIRE(metrics.status <= 1);  // 1: nothing held now
    INFO(metrics.out);
    auto runs = runs_total(metrics.out);
    CHECK(runs["/job.good/succeeded"] == 2);
    CHECK(runs["/job.good/failed"] == 0);
    CHECK(runs["/job.bad/succeeded"] == 0);
    CHECK(runs["/job.bad/failed"] == 1);
    CHECK(runs["/job.term/failed"] == 1);
    CHECK(runs["/job.good/acquired"] == 2);
    CHECK(gauge_sample(metrics.out,
                       "clock_last_exit_status{namespace=\"\",resource=\"job.good\"}") == "0");
    CHECK(gauge_sample(metrics.out,
                       "clock_last_exit_status{namespace=\"\",resource=\"job.bad\"}") == "3");
    CHECK(gauge_sample(metrics.out,
                       "clock_last_exit_status{namespace=\"\",resource=\"job.term\"}") == "143");
    for (const char* resource : {"job.good", "job.bad", "job.term"}) {
      auto seconds =
          gauge_sample(metrics.out, "clock_last_run_duration_seconds{namespace=\"\",resource=\"" +
                                        std::string(resource) + "\"}");
      CHECK_MESSAGE(!seconds.empty(), resource);
      if (!seconds.empty())
        CHECK(std::stod(seconds) >= 0);
    }
  }

  TEST_CASE("--once-per counts a run history calls succeeded, not one a signal ended") {
    TestEnv env;
    CHECK_EXIT(
        env.clock({"run", "--once-per", "1h", "-r", "nightly", "--", "sh", "-c", "kill -TERM $$"}),
        143);
    // The period is not done: the next request runs.
    CHECK_EXIT(env.shell("\"$T_CLOCK\" run --once-per 1h -r nightly -- touch \"$T_DIR/ran\""), 0);
    CHECK(fs::exists(env.path("ran")));
    auto released = released_by_resource(env);
    CHECK(released["nightly"]["exit_code"] == 0);  // the newest: the run that did the period
    // Now it is: skipped, naming the run history records as exit 0.
    CHECK_EXIT(env.clock({"run", "--once-per", "1h", "-r", "nightly", "--", "false"}), 0);
    Result skipped = env.clock({"history", "--event", "skipped", "--format", "json"});
    REQUIRE_EXIT(skipped, 0);
    auto events = json::parse(skipped.out)["events"];
    REQUIRE(events.size() == 1);
    CHECK(events[0]["done_by"]["token"] == released["nightly"]["token"]);
  }

  TEST_CASE("history --since and --host keep only the events they name") {
    TestEnv env;
    CHECK_EXIT(env.clock({"run", "-r", "early", "--", "true"}), 0);
    auto early = released_by_resource(env).at("early");
    // A later run, until the database's clock has moved past the first.
    json late;
    REQUIRE(await(
        [&] {
          CHECK_EXIT(env.clock({"run", "-r", "late", "--", "true"}), 0);
          late = released_by_resource(env).at("late");
          return late["at"].get<std::string>() > early["at"].get<std::string>();
        },
        30s));
    auto resources_of = [&](const std::vector<std::string>& filters) {
      std::vector<std::string> args = {"history", "--event", "released", "--format", "json"};
      args.insert(args.end(), filters.begin(), filters.end());
      Result history = env.clock(args);
      REQUIRE_EXIT(history, 0);
      std::multiset<std::string> out;
      const json reply = json::parse(history.out);
      for (const auto& event : reply["events"])
        out.insert(event["resource"].get<std::string>());
      return out;
    };
    const auto late_at = late["at"].get<std::string>();
    INFO("early " << early["at"] << ", late " << late_at);
    CHECK(resources_of({"--since", late_at}).count("early") == 0);
    CHECK(resources_of({"--since", late_at}).count("late") >= 1);
    CHECK(resources_of({"--since", "1h"}).count("early") == 1);
    CHECK(resources_of({"--since", "2000-01-01"}).count("early") == 1);
    CHECK(resources_of({"--since", "2200-01-01T00:00Z"}).empty());
    CHECK(resources_of({"--host", host_name()}).count("early") == 1);
    CHECK(resources_of({"--host", "no-such-host." + host_name()}).empty());
    CHECK(resources_of({"--host", host_name(), "--since", late_at}).count("early") == 0);
    Result bad = env.clock({"history", "--since", "last tuesday"});
    CHECK_EXIT(bad, 64);
    CHECK(bad.err.find("--since") != std::string::npos);
  }
}
