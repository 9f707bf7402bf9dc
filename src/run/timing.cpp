// Lease arithmetic for `clock run`: margins, deadlines, backoff, and the
// message that refuses a TTL too short to be safe.
#include "run/timing.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "error.hpp"
#include "util/duration.hpp"

namespace clk::run {

namespace {

using namespace std::chrono_literals;

constexpr milliseconds k_min_margin = 100ms;
constexpr milliseconds k_max_margin = 5s;
constexpr milliseconds k_min_retry = 200ms;

bool leaves_room(milliseconds ttl, milliseconds heartbeat, milliseconds kill_after) {
  return ttl > heartbeat + kill_after + safety_margin(ttl);
}

// Whether a TTL works for these options, with the timings the operator left
// at their defaults scaled with that TTL, as clock run would scale them.
bool works_with_defaults(milliseconds ttl, const RunOptions& options, bool heartbeat_chosen,
                         bool kill_after_chosen) {
  milliseconds heartbeat = heartbeat_chosen ? options.heartbeat : default_heartbeat(ttl);
  milliseconds kill_after = kill_after_chosen ? options.kill_after : default_kill_after(ttl);
  return leaves_room(ttl, heartbeat, kill_after);
}

std::string lease_label(const RunOptions& options) {
  return options.lease_name.empty() ? "the lease" : "lease " + options.lease_name;
}

milliseconds budget_of(const RunOptions& options) {
  return outage_budget(options.ttl, options.heartbeat, options.kill_after);
}

struct ChosenTiming {
  std::string flag;
  milliseconds value;
};

// The timings the operator set away from the TTL's defaults.
std::vector<ChosenTiming> chosen_timings(const RunOptions& options) {
  std::vector<ChosenTiming> chosen;
  if (options.heartbeat != default_heartbeat(options.ttl))
    chosen.push_back({"--heartbeat", options.heartbeat});
  if (options.kill_after != default_kill_after(options.ttl))
    chosen.push_back({"--kill-after", options.kill_after});
  return chosen;
}

}  // namespace

milliseconds suggested_ttl(const RunOptions& options) {
  bool heartbeat_chosen = options.heartbeat != default_heartbeat(options.ttl);
  bool kill_after_chosen = options.kill_after != default_kill_after(options.ttl);
  auto works = [&](milliseconds ttl) {
    return works_with_defaults(ttl, options, heartbeat_chosen, kill_after_chosen);
  };
  // The defaults' integer steps make "works" not quite monotonic in the
  // TTL, so the first that works is found by counting up (a few thousand
  // steps at most for TTLs under a minute; this runs only to word an error).
  milliseconds ttl = std::max(options.ttl + 1ms, 1ms);
  while (!works(ttl))
    ++ttl;
  if (ttl < 1s)
    return ttl;
  // Operators type whole seconds: the next whole second that works.
  milliseconds whole = std::chrono::ceil<std::chrono::seconds>(ttl);
  while (!works(whole))
    whole += 1s;
  return whole;
}

milliseconds safety_margin(milliseconds ttl) {
  return std::clamp(ttl / 20, k_min_margin, k_max_margin);
}

std::chrono::steady_clock::time_point lease_deadline(
    std::chrono::steady_clock::time_point last_renewal_start, milliseconds ttl,
    milliseconds kill_after) {
  return last_renewal_start + ttl - kill_after - safety_margin(ttl);
}

milliseconds minimum_ttl(milliseconds heartbeat, milliseconds kill_after) {
  // ttl - safety_margin(ttl) never decreases as ttl grows, so the accepted
  // TTLs are everything from some value up: binary-search for it.
  milliseconds low{0};                                              // refused
  milliseconds high = heartbeat + kill_after + k_max_margin + 1ms;  // accepted
  while (high - low > 1ms) {
    milliseconds mid = low + (high - low) / 2;
    if (leaves_room(mid, heartbeat, kill_after)) {
      high = mid;
    } else {
      low = mid;
    }
  }
  return high;
}

milliseconds outage_budget(milliseconds ttl, milliseconds heartbeat, milliseconds kill_after) {
  return ttl - kill_after - safety_margin(ttl) - heartbeat;
}

std::string budget_summary(const RunOptions& options) {
  using util::format_duration;
  if (options.ttl <= 0ms)
    return lease_label(options) + ": no expiry (--ttl 0): not renewed, never lost";
  return fmt::format(
      "{}: ttl {}, renewed every {}, the command is stopped {} before expiry (--kill-after {} "
      "+ {} margin): rides out a database outage of {}",
      lease_label(options), format_duration(options.ttl), format_duration(options.heartbeat),
      format_duration(options.kill_after + safety_margin(options.ttl)),
      format_duration(options.kill_after), format_duration(safety_margin(options.ttl)),
      format_duration(budget_of(options)));
}

std::optional<std::string> thin_budget_warning(const RunOptions& options) {
  using util::format_duration;
  if (options.ttl <= 0ms || budget_of(options) >= k_thin_outage_budget)
    return std::nullopt;
  std::vector<ChosenTiming> chosen = chosen_timings(options);
  if (chosen.empty())
    return std::nullopt;
  std::vector<std::string> settings{"--ttl " + format_duration(options.ttl)};
  std::vector<std::string> to_shorten;
  for (const ChosenTiming& timing : chosen) {
    settings.push_back(timing.flag + " " + format_duration(timing.value));
    to_shorten.push_back(timing.flag);
  }
  milliseconds heartbeat_default = default_heartbeat(options.ttl);
  milliseconds kill_after_default = default_kill_after(options.ttl);
  return fmt::format(
      "{} rides out a database outage of only {} ({}); shorten {} (the defaults for this TTL, "
      "--heartbeat {} and --kill-after {}, ride out {}) or lengthen --ttl",
      lease_label(options), format_duration(std::max(budget_of(options), 0ms)),
      fmt::join(settings, ", "), fmt::join(to_shorten, " or "), format_duration(heartbeat_default),
      format_duration(kill_after_default),
      format_duration(outage_budget(options.ttl, heartbeat_default, kill_after_default)));
}

void check_timing(const RunOptions& options) {
  using util::format_duration;
  if (options.ttl <= 0ms)
    return;  // no expiry: nothing to renew, nothing to lose
  if (options.heartbeat <= 0ms) {
    throw Error(ExitCode::usage, "--heartbeat must be above 0 when the lease has a --ttl");
  }
  if (leaves_room(options.ttl, options.heartbeat, options.kill_after))
    return;
  throw Error(
      ExitCode::usage,
      fmt::format("--ttl {} is too short: the child must be stopped (--kill-after {} + {} "
                  "margin) before the lease can expire, and renewals come every {}; use a "
                  "--ttl of at least {} or shorten --kill-after/--heartbeat",
                  format_duration(options.ttl), format_duration(options.kill_after),
                  format_duration(safety_margin(options.ttl)), format_duration(options.heartbeat),
                  format_duration(suggested_ttl(options))));
}

milliseconds retry_delay(int attempt, milliseconds heartbeat, double jitter) {
  milliseconds cap = std::max(heartbeat, 1ms);
  milliseconds delay = std::min(std::max(heartbeat / 10, k_min_retry), cap);
  for (int i = 1; i < attempt && delay < cap; ++i)
    delay = std::min(delay * 2, cap);
  jitter = std::clamp(jitter, 0.5, 1.0);
  auto scaled =
      milliseconds(static_cast<milliseconds::rep>(static_cast<double>(delay.count()) * jitter));
  return std::max(scaled, 1ms);
}

}  // namespace clk::run
