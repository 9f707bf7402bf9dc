// The lease arithmetic of `clock run`: margins, deadlines, backoff, and the
// refusal of a TTL too short to stop the child in time.
#include <initializer_list>
#include <string>

#include <doctest/doctest.h>

#include "error.hpp"
#include "run/options.hpp"
#include "run/timing.hpp"
#include "util/duration.hpp"

using namespace std::chrono_literals;
using clk::run::milliseconds;
using clk::run::RunOptions;

namespace {

RunOptions timings(milliseconds ttl, milliseconds heartbeat, milliseconds kill_after) {
  RunOptions options;
  options.argv = {"true"};
  options.ttl = ttl;
  options.heartbeat = heartbeat;
  options.kill_after = kill_after;
  return options;
}

std::string refusal(const RunOptions& options) {
  try {
    clk::run::check_timing(options);
  } catch (const clk::Error& error) {
    CHECK(error.code() == clk::ExitCode::usage);
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the safety margin is a twentieth of the TTL, between 100ms and 5s") {
  CHECK(clk::run::safety_margin(0ms) == 100ms);
  CHECK(clk::run::safety_margin(1s) == 100ms);
  CHECK(clk::run::safety_margin(3s) == 150ms);
  CHECK(clk::run::safety_margin(90s) == 4500ms);
  CHECK(clk::run::safety_margin(100s) == 5s);
  CHECK(clk::run::safety_margin(1h) == 5s);
}

TEST_CASE("the deadline is the last renewal's start plus the TTL, less kill-after and margin") {
  auto start = std::chrono::steady_clock::time_point{} + 1h;
  CHECK(clk::run::lease_deadline(start, 90s, 10s) == start + 75500ms);
  CHECK(clk::run::lease_deadline(start, 1s, 200ms) == start + 700ms);
}

TEST_CASE("the default timings are accepted") {
  CHECK_NOTHROW(clk::run::check_timing(timings(90s, 30s, 10s)));
}

TEST_CASE("a TTL of 0 means no expiry and is accepted with any timings") {
  CHECK_NOTHROW(clk::run::check_timing(timings(0ms, 0ms, 1h)));
}

TEST_CASE("a TTL too short to stop the child in time is refused, saying why") {
  std::string message = refusal(timings(3s, 1s, 10s));
  CHECK(message.find("--ttl 3s is too short") != std::string::npos);
  CHECK(message.find("--kill-after 10s + 150ms margin") != std::string::npos);
  CHECK(message.find("every 1s") != std::string::npos);
  CHECK(message.find("at least 12s") != std::string::npos);
  CHECK(message.find('\n') == std::string::npos);
}

TEST_CASE("a TTL that leaves no room for one renewal is refused") {
  // 90s - 10s - 4.5s = 75.5s: a 76s heartbeat would come too late.
  CHECK(!refusal(timings(90s, 76s, 10s)).empty());
  CHECK(refusal(timings(90s, 75s, 10s)).empty());
}

TEST_CASE("a zero heartbeat is refused when the lease has a TTL") {
  CHECK(refusal(timings(90s, 0ms, 10s)).find("--heartbeat") != std::string::npos);
}

TEST_CASE("minimum_ttl is exactly the boundary check_timing draws") {
  using Timings = std::pair<milliseconds, milliseconds>;
  for (auto [heartbeat, kill_after] : {Timings{1s, 10s}, {30s, 10s}, {50ms, 0s}, {200s, 1h}}) {
    milliseconds minimum = clk::run::minimum_ttl(heartbeat, kill_after);
    CHECK(refusal(timings(minimum, heartbeat, kill_after)).empty());
    CHECK(!refusal(timings(minimum - 1ms, heartbeat, kill_after)).empty());
  }
}

TEST_CASE("the suggested TTL is rounded up to whole seconds and is accepted") {
  // minimum_ttl(1s, 10s) is about 11.6s; 12s is what to type.
  CHECK(refusal(timings(12s, 1s, 10s)).empty());
  CHECK(!refusal(timings(11s, 1s, 10s)).empty());
}

// --ttl alone scales --heartbeat and --kill-after with it: the suggestion is
// what works when typed as --ttl alone (once, 200ms suggested 211ms,
// which suggested 222ms; 223ms is the first that works).
TEST_CASE("the TTL suggested for default timings is accepted with the defaults it brings") {
  using clk::run::default_heartbeat;
  using clk::run::default_kill_after;
  for (milliseconds ttl : {50ms, 200ms, 211ms, 222ms}) {
    CAPTURE(ttl.count());
    auto options = timings(ttl, default_heartbeat(ttl), default_kill_after(ttl));
    REQUIRE(!refusal(options).empty());
    milliseconds suggested = clk::run::suggested_ttl(options);
    CAPTURE(suggested.count());
    CHECK(refusal(timings(suggested, default_heartbeat(suggested), default_kill_after(suggested)))
              .empty());
    CHECK(refusal(options).find("at least " + clk::util::format_duration(suggested)) !=
          std::string::npos);
  }
  CHECK(clk::run::suggested_ttl(timings(200ms, 100ms, 20ms)) == 223ms);
}

TEST_CASE("renewal retries back off exponentially from a tenth of the heartbeat to the heartbeat") {
  CHECK(clk::run::retry_delay(1, 30s, 1.0) == 3s);
  CHECK(clk::run::retry_delay(2, 30s, 1.0) == 6s);
  CHECK(clk::run::retry_delay(3, 30s, 1.0) == 12s);
  CHECK(clk::run::retry_delay(4, 30s, 1.0) == 24s);
  CHECK(clk::run::retry_delay(5, 30s, 1.0) == 30s);
  CHECK(clk::run::retry_delay(1000, 30s, 1.0) == 30s);
}

TEST_CASE("renewal retries start at 200ms but never wait longer than the heartbeat") {
  CHECK(clk::run::retry_delay(1, 1s, 1.0) == 200ms);
  CHECK(clk::run::retry_delay(1, 100ms, 1.0) == 100ms);
  CHECK(clk::run::retry_delay(3, 100ms, 1.0) == 100ms);
}

TEST_CASE("renewal retries are jittered down to half the delay") {
  CHECK(clk::run::retry_delay(1, 30s, 0.5) == 1500ms);
  CHECK(clk::run::retry_delay(5, 30s, 0.75) == 22500ms);
  CHECK(clk::run::retry_delay(1, 30s, 0.0) == 1500ms);  // clamped
}

TEST_CASE("the outage budget is the TTL less kill-after, the margin and one heartbeat") {
  CHECK(clk::run::outage_budget(90s, 9s, 9s) == 67500ms);
  CHECK(clk::run::outage_budget(20s, 6666ms, 10s) == 2334ms);  // the old defaults
  CHECK(clk::run::outage_budget(20s, 8s, 10s) == 1s);
  CHECK(clk::run::outage_budget(3s, 1s, 10s) < 0ms);
}

TEST_CASE("with default timings every TTL from 1s to 1h rides out an outage of half the TTL") {
  for (milliseconds ttl : std::initializer_list<milliseconds>{
           1s, 2s, 3s, 5s, 10s, 15s, 20s, 30s, 60s, 90s, 100s, 2min, 5min, 10min, 30min, 1h}) {
    CAPTURE(ttl.count());
    milliseconds heartbeat = clk::run::default_heartbeat(ttl);
    milliseconds kill_after = clk::run::default_kill_after(ttl);
    CHECK(clk::run::outage_budget(ttl, heartbeat, kill_after) >= ttl / 2);
    CHECK_NOTHROW(clk::run::check_timing(timings(ttl, heartbeat, kill_after)));
  }
}

TEST_CASE("the default heartbeat is a tenth of the TTL, at least 100ms") {
  CHECK(clk::run::default_heartbeat(90s) == 9s);
  CHECK(clk::run::default_heartbeat(1h) == 6min);
  CHECK(clk::run::default_heartbeat(1s) == 100ms);
  CHECK(clk::run::default_heartbeat(200ms) == 100ms);
}

TEST_CASE("the default kill-after is a tenth of the TTL, at most 10s, and 10s without a TTL") {
  CHECK(clk::run::default_kill_after(90s) == 9s);
  CHECK(clk::run::default_kill_after(1h) == 10s);
  CHECK(clk::run::default_kill_after(1s) == 100ms);
  CHECK(clk::run::default_kill_after(0ms) == 10s);
}

TEST_CASE("the default run options are the defaults for the default TTL") {
  RunOptions options;
  CHECK(options.heartbeat == clk::run::default_heartbeat(options.ttl));
  CHECK(options.kill_after == clk::run::default_kill_after(options.ttl));
}

TEST_CASE("the budget summary states the timings and the outage they ride out") {
  RunOptions options = timings(90s, 9s, 9s);
  options.lease_name = "x";
  CHECK(clk::run::budget_summary(options) ==
        "lease x: ttl 1m30s, renewed every 9s, the command is stopped 13s before expiry "
        "(--kill-after 9s + 4s margin): rides out a database outage of 1m7s");
  CHECK(clk::run::budget_summary(timings(0ms, 9s, 10s)).find("no expiry") != std::string::npos);
}

TEST_CASE("chosen timings that ride out under 5s are warned about, naming the flags to change") {
  RunOptions options = timings(20s, 8s, 10s);  // rides out 1s
  options.lease_name = "x";
  auto warning = clk::run::thin_budget_warning(options);
  REQUIRE(warning.has_value());
  CHECK(warning->find("lease x rides out a database outage of only 1s") != std::string::npos);
  CHECK(warning->find("--ttl 20s, --heartbeat 8s, --kill-after 10s") != std::string::npos);
  CHECK(warning->find("shorten --heartbeat or --kill-after") != std::string::npos);
  CHECK(warning->find("lengthen --ttl") != std::string::npos);
  CHECK(warning->find('\n') == std::string::npos);
}

TEST_CASE("the warning threshold is 5s of outage") {
  // 20s - 2s (default kill-after) - 1s margin: a heartbeat of 12s leaves 5s, 12.001s less.
  CHECK_FALSE(clk::run::thin_budget_warning(timings(20s, 12s, 2s)).has_value());
  auto warning = clk::run::thin_budget_warning(timings(20s, 12001ms, 2s));
  REQUIRE(warning.has_value());
  CHECK(warning->find("shorten --heartbeat (") != std::string::npos);
}

TEST_CASE("default timings and leases without expiry are not warned about") {
  // A 5s TTL rides out under 5s with the defaults: that TTL is the operator's choice.
  milliseconds ttl = 5s;
  CHECK_FALSE(clk::run::thin_budget_warning(
                  timings(ttl, clk::run::default_heartbeat(ttl), clk::run::default_kill_after(ttl)))
                  .has_value());
  CHECK_FALSE(clk::run::thin_budget_warning(timings(0ms, 1h, 1h)).has_value());
}

TEST_CASE(
    "below 500ms the 100ms floors leave less than half the TTL; 223ms is the least accepted") {
  auto default_timings = [](milliseconds ttl) {
    return timings(ttl, clk::run::default_heartbeat(ttl), clk::run::default_kill_after(ttl));
  };
  auto default_budget = [](milliseconds ttl) {
    return clk::run::outage_budget(ttl, clk::run::default_heartbeat(ttl),
                                   clk::run::default_kill_after(ttl));
  };
  CHECK(default_budget(500ms) == 250ms);
  CHECK(default_budget(400ms) < 200ms);
  CHECK(refusal(default_timings(223ms)).empty());
  CHECK(default_budget(223ms) == 1ms);
  CHECK(!refusal(default_timings(222ms)).empty());
}
