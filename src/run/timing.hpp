// The lease arithmetic of `clock run`, pure: the safety margin, the local
// deadline for stopping the child, renewal backoff, and the start-up check
// that a TTL leaves room for all of it.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "run/options.hpp"

namespace clk::run {

// The safety margin subtracted from the lease-lost deadline besides
// --kill-after: covers scheduling delays and clock-rate drift between this
// host and the database server. ttl/20, clamped to [100ms, 5s].
milliseconds safety_margin(milliseconds ttl);

// When the child must start being stopped, on the local steady clock: the
// server counts the lease from a moment no earlier than the start of the
// renewal attempt, so the child (given --kill-after to exit) is gone before
// the lease could expire and be granted to someone else.
std::chrono::steady_clock::time_point lease_deadline(
    std::chrono::steady_clock::time_point last_renewal_start, milliseconds ttl,
    milliseconds kill_after);

// The smallest TTL that check_timing accepts for these settings.
milliseconds minimum_ttl(milliseconds heartbeat, milliseconds kill_after);

// The TTL that check_timing's refusal suggests: the first above options.ttl
// that it accepts with the same --heartbeat and --kill-after where the
// operator chose them, and their TTL-scaled defaults where not (so the
// suggestion works as typed); whole seconds from 1s up.
milliseconds suggested_ttl(const RunOptions& options);

// The longest database outage a run rides out, in its worst phase: the
// outage begins just as a renewal is due, so the last renewal that succeeded
// started a whole heartbeat earlier, and the child is stopped at that start
// + ttl - kill_after - margin. So ttl - kill_after - safety_margin(ttl) -
// heartbeat; negative when the timings leave no room.
milliseconds outage_budget(milliseconds ttl, milliseconds heartbeat, milliseconds kill_after);

// Below this outage budget, timings the operator chose are warned about.
inline constexpr milliseconds k_thin_outage_budget{5'000};

// The line `clock run -v` logs at start: the lease's timings and the outage
// they ride out.
std::string budget_summary(const RunOptions& options);

// A one-line warning, naming the flags to change, when a --heartbeat or
// --kill-after other than the TTL's default leaves under
// k_thin_outage_budget of outage; none otherwise (the defaults scale with the
// TTL, so a short TTL alone is the operator's choice, not a slip).
std::optional<std::string> thin_budget_warning(const RunOptions& options);

// Throws clk::Error(usage) when `ttl` is too short to renew in time and still
// stop the child before the server could grant the lock to someone else.
void check_timing(const RunOptions& options);

// How long to wait before retry number `attempt` (1-based) after a renewal
// found the backend unavailable: exponential from heartbeat/10 (at least
// 200ms, at most the heartbeat), capped at the heartbeat, and scaled by
// `jitter` in [0.5, 1] so that many clients do not retry in step.
milliseconds retry_delay(int attempt, milliseconds heartbeat, double jitter);

}  // namespace clk::run
