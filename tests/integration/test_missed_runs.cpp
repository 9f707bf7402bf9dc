// Runs that did not happen are history (man clock, GUARANTEES): `clock run`
// refused under -n records `skipped`, one that gave up after -w records
// `timed_out`, each naming who was in the way; `clock history --event KIND`
// shows one kind. `clock acquire` refusals are not runs and record nothing.
#include <set>
#include <string>

#include <doctest/doctest.h>

#include "harness.hpp"

using namespace clk::test;

namespace {

nlohmann::json missed_run_events(const TestEnv& env, const std::string& kind) {
  Result history = env.clock({"history", "--event", kind, "--format", "json"});
  REQUIRE_EXIT(history, 0);
  return nlohmann::json::parse(history.out)["events"];
}

}  // namespace

TEST_SUITE("missed runs") {
  TEST_CASE("a run refused under -n is recorded as skipped, naming the holder") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "job"});
    Result skipped = env.clock({"run", "-n", "-E", "0", "-r", "job", "--", "true"});
    CHECK_EXIT(skipped, 0);
    CHECK(skipped.err.empty());

    auto events = missed_run_events(env, "skipped");
    INFO(events.dump(2));
    REQUIRE(events.size() == 1);
    const auto& event = events[0];
    CHECK(event["resource"] == "job");
    CHECK(event["token"] == 0);
    CHECK(event["command"].get<std::string>().find("true") != std::string::npos);
    CHECK(event["pid"].get<long long>() > 0);
    CHECK(event["in_the_way"]["owner"] == holder.owner);
    CHECK(event["in_the_way"]["token"] == holder.token());
    CHECK(event["in_the_way"]["host"] == host_name());

    // The same refusal by `clock acquire` is not a run.
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "job"}), 75);
    CHECK(missed_run_events(env, "skipped").size() == 1);
    // Nothing else was recorded for the skipped run.
    CHECK(missed_run_events(env, "acquired").size() == 1);
  }

  TEST_CASE("a skipped run of two resources is one record per resource, each counted") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "m"});
    CHECK_EXIT(env.clock({"run", "-n", "-r", "m.a", "-r", "m.b", "--", "true"}), 75);
    auto events = missed_run_events(env, "skipped");
    INFO(events.dump(2));
    REQUIRE(events.size() == 2);
    std::set<std::string> resources;
    for (const auto& event : events) {
      resources.insert(event["resource"].get<std::string>());
      CHECK(event["in_the_way"]["owner"] == holder.owner);
      CHECK(event["in_the_way"]["token"] == holder.token());
    }
    CHECK(resources == std::set<std::string>{"m.a", "m.b"});
    auto runs = runs_total(env.clock({"status", "--format", "prometheus"}).out);
    CHECK(runs["/m.a/skipped"] == 1);
    CHECK(runs["/m.b/skipped"] == 1);
  }

  TEST_CASE("a run that gave up after -w is recorded as timed_out, naming the holder") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "job"});
    CHECK_EXIT(env.clock({"run", "-w", "300ms", "-r", "job", "--", "true"}), 75);

    auto events = missed_run_events(env, "timed_out");
    INFO(events.dump(2));
    REQUIRE(events.size() == 1);
    CHECK(events[0]["resource"] == "job");
    CHECK(events[0]["in_the_way"]["owner"] == holder.owner);
    CHECK(events[0]["in_the_way"]["token"] == holder.token());
    CHECK(env.status()["waiters"].empty());
    CHECK(missed_run_events(env, "skipped").empty());
  }

  TEST_CASE("a run behind a queued request names the queue entry, without a token") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "job.part"});
    auto queued = env.spawn(env.clock_command({"acquire", "-r", "job", "-w", "60s"}));
    REQUIRE(await([&] { return !env.status()["waiters"].empty(); }, 30s, 20ms));
    // A request for job.other conflicts with nobody's lease, only with the
    // queued request for job, which it may not overtake.
    CHECK_EXIT(env.clock({"run", "-n", "-r", "job.other", "--", "true"}), 75);
    auto events = missed_run_events(env, "skipped");
    INFO(events.dump(2));
    REQUIRE(events.size() == 1);
    CHECK(events[0]["in_the_way"]["token"].is_null());
    CHECK(events[0]["in_the_way"]["owner"] != holder.owner);

    CHECK_EXIT(env.clock({"release", "-r", "job.part", "--owner", holder.credential}), 0);
    CHECK_EXIT(queued->wait(30s), 0);
  }

  TEST_CASE("history --event shows one kind and refuses an unknown one") {
    TestEnv env;
    Acquired a = env.acquire({"-r", "a"});
    CHECK_EXIT(env.clock({"release", "-r", "a", "--owner", a.credential}), 0);
    auto released = missed_run_events(env, "released");
    REQUIRE(released.size() == 1);
    CHECK(released[0]["event"] == "released");
    CHECK(missed_run_events(env, "forced").empty());

    Result bad = env.clock({"history", "--event", "exploded"});
    CHECK_EXIT(bad, 64);
    CHECK(bad.err_lines().size() == 1);
  }
}
