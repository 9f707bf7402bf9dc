// Siblings never refuse each other: resources that share a
// top-level name but are not related (fleet.job1 … fleet.job6) never
// conflict, so `clock run -n` on one is never refused because another clock
// is writing next door at that instant (a sibling's grant, release or
// renewal). Only a live holder or an earlier waiter of a related resource
// refuses -n, and every refusal is in history with who was in the way; a
// session keeping clock's rows in an open transaction of its own is the one
// case with no holder, and it is named as such (PostgreSQL).
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "harness.hpp"
#include "postgres_tools.hpp"

using namespace clk::test;
using nlohmann::json;

namespace {

// The history events of `resource` of one kind.
json sibling_events(const TestEnv& env, const std::string& resource, const std::string& event) {
  Result history =
      env.clock({"history", resource, "--event", event, "--limit", "10000", "--format", "json"});
  REQUIRE_EXIT(history, 0);
  return json::parse(history.out)["events"];
}

}  // namespace

TEST_SUITE("siblings") {
  TEST_CASE("six sibling -n runs started together, six rounds: none refused") {
    TestEnv env;
    int refused = 0;
    for (int round = 0; round < 6; ++round) {
      // Each waits for the round's go file, so the six start at one instant.
      const std::string go = env.path("go." + std::to_string(round)).string();
      std::vector<std::unique_ptr<Process>> runs;
      for (int job = 1; job <= 6; ++job) {
        runs.push_back(
            env.spawn(env.shell_command("while [ ! -e \"$GO\" ]; do sleep 0.01; done\n"
                                        "exec \"$T_CLOCK\" run -n -r fleet.job$N -- sleep 0.3",
                                        {{"GO", go}, {"N", std::to_string(job)}})));
      }
      write_file(go, "");
      for (auto& run : runs) {
        Result result = run->wait(60s);
        INFO(result.describe());
        CHECK(result.status != -1);
        if (result.status == 75)
          ++refused;
        else
          CHECK_EXIT(result, 0);
      }
    }
    CHECK(refused == 0);
    for (int job = 1; job <= 6; ++job) {
      const std::string resource = "fleet.job" + std::to_string(job);
      CAPTURE(resource);
      CHECK(sibling_events(env, resource, "acquired").size() == 6);
      CHECK(sibling_events(env, resource, "skipped").empty());
    }
  }

  TEST_CASE("40 -n runs beside a sibling holder renewing every 200ms: none refused") {
    TestEnv env;
    auto holder =
        env.spawn(env.clock_command({"run", "--ttl", "10s", "--heartbeat", "200ms", "-r",
                                     "fleet.long", "--", "sh", "-c", env.holding_script("long")}));
    REQUIRE(env.await_started("long"));
    int refused = 0;
    for (int n = 0; n < 40; ++n) {
      Result result = env.clock({"run", "-n", "-r", "fleet.other", "--", "true"});
      INFO(result.describe());
      if (result.status == 75)
        ++refused;
      else
        CHECK_EXIT(result, 0);
    }
    CHECK(holder->running());  // it renewed all along
    env.let_go("long");
    CHECK_EXIT(holder->wait(30s), 0);
    CHECK(refused == 0);
    CHECK(sibling_events(env, "fleet.other", "acquired").size() == 40);
    CHECK(sibling_events(env, "fleet.other", "skipped").empty());
  }

  TEST_CASE("a live sibling-related holder still refuses -n, recorded with who was in the way") {
    TestEnv env;
    auto holder = env.acquire({"-r", "fleet", "--ttl", "1m"});
    Result result = env.clock({"run", "-n", "-r", "fleet.job1", "--", "true"});
    CHECK_EXIT(result, 75);
    auto skipped = sibling_events(env, "fleet.job1", "skipped");
    REQUIRE(skipped.size() == 1);
    CHECK(skipped[0]["in_the_way"]["owner"] == holder.owner);
    CHECK(skipped[0]["in_the_way"]["token"] == holder.token());
  }

  TEST_CASE(
      "-n behind a session that keeps clock's rows in an open transaction: 75 after the "
      "bounded wait, saying so, and recorded" *
      only_on("postgres")) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"run", "-r", "fleet.job2", "--", "true"}), 0);  // the schema
    pg::PsqlSession session(env, env.url());
    session.execute("BEGIN");
    session.execute(
        "SELECT 1 FROM clock.hierarchy_locks WHERE slot = clock.hierarchy_slot('', 'fleet') "
        "FOR NO KEY UPDATE");
    Result result = env.clock({"run", "-n", "-v", "-r", "fleet.job1", "--", "true"});
    session.execute("COMMIT");
    CHECK_EXIT(result, 75);
    CHECK(result.err.find("another transaction holds locks under the same top-level name") !=
          std::string::npos);
    CHECK(result.err.find("open transaction of its own for over 2s") != std::string::npos);
    auto skipped = sibling_events(env, "fleet.job1", "skipped");
    REQUIRE(skipped.size() == 1);
    CHECK(skipped[0]["in_the_way"]["host"] == "an open transaction of another session");
    // The same run once the transaction is over: granted.
    CHECK_EXIT(env.clock({"run", "-n", "-r", "fleet.job1", "--", "true"}), 0);
    CHECK(session.finish() == 0);
  }
}
