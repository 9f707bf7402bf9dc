// The defaults of `clock run`'s timings, which scale with the TTL.
#include "run/options.hpp"

#include <algorithm>

namespace clk::run {

namespace {

using namespace std::chrono_literals;

constexpr milliseconds k_min_default_heartbeat = 100ms;
constexpr milliseconds k_max_default_kill_after = 10s;

}  // namespace

milliseconds default_heartbeat(milliseconds ttl) {
  return std::max(ttl / 10, k_min_default_heartbeat);
}

milliseconds default_kill_after(milliseconds ttl) {
  if (ttl <= 0ms)
    return k_max_default_kill_after;
  return std::min(ttl / 10, k_max_default_kill_after);
}

}  // namespace clk::run
