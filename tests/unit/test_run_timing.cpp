// The lease arithmetic of `clock run`: margins, deadlines, backoff, and the
// refusal of a TTL too short to stop the child in time.
#include <string>

#include <doctest/doctest.h>

#include "error.hpp"
#include "run/timing.hpp"

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
