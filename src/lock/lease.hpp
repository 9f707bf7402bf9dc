// What the lock table holds: leases (granted locks) and waiters (queued
// requests), as the stores report them. Instants are on the database's clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lock/mode.hpp"
#include "lock/owner.hpp"
#include "lock/resource.hpp"

namespace clk::lock {

using Token = std::int64_t;
using Instant = std::chrono::system_clock::time_point;

// An instant stored as a count of `Unit` since the epoch. The count is what
// the database holds, which any earlier version may have written: a lease
// taken before --ttl had a cap can expire past year 2262, the last instant a
// nanosecond system_clock holds. Such counts read as that last instant (and
// the first, for the past), instead of overflowing.
template <typename Unit>
Instant instant_since_epoch(std::int64_t count) {
  constexpr auto k_latest = std::chrono::duration_cast<Unit>(Instant::max().time_since_epoch());
  constexpr auto k_earliest = std::chrono::duration_cast<Unit>(Instant::min().time_since_epoch());
  const Unit since{count};
  if (since >= k_latest)
    return Instant::max();
  if (since <= k_earliest)
    return Instant::min();
  return Instant(std::chrono::duration_cast<Instant::duration>(since));
}

// A lease's time-to-live when neither flag, environment nor config file sets
// one: long enough to outlast a slow database failover, short enough that a
// dead holder's lock frees within minutes.
inline constexpr std::chrono::milliseconds k_default_ttl{90'000};

// The longest TTL a lease may ask for. A lease that outlives its holder blocks
// everyone until 'clock release --force', and an expiry far enough away
// (--ttl 2920000d) lands past year 9999, which no timestamp type reads back:
// a month covers any job clock run renews and any hand-held maintenance lock;
// longer is `--ttl 0` (no expiry), which says so.
inline constexpr std::chrono::milliseconds k_max_ttl = std::chrono::days(30);

// Past this TTL a holder that dies keeps the lock for long: warned, as 0 is.
inline constexpr std::chrono::milliseconds k_long_ttl = std::chrono::days(1);

// A process the holder's command left running when it exited (clock run,
// --leftovers), as the holder reports it on its lease: running while it is
// awaited, then waited (it exited by itself) or ended (clock ended it).
enum class LeftoverFate { running, waited, ended };

struct Leftover {
  std::int64_t pid = 0;
  std::string command;
  LeftoverFate fate = LeftoverFate::running;
  bool operator==(const Leftover&) const = default;
};

struct Lease {
  std::string ns;
  Resource resource;
  OwnerId owner;
  OwnerInfo info;
  Mode mode = Mode::exclusive;
  int slots = 0;  // 0: a plain lock; N > 0: one of up to N semaphore holders
  Token token = 0;
  int depth = 1;  // re-entry count
  Instant acquired_at{};
  Instant renewed_at{};
  std::optional<Instant> expires_at;  // none: --ttl 0, no expiry
  std::vector<Leftover> leftovers;    // what the holder last reported (Store::note_leftovers)
};

struct Waiter {
  std::string ns;
  Resource resource;
  OwnerId owner;
  OwnerInfo info;
  Mode mode = Mode::exclusive;
  int slots = 0;
  std::int64_t position = 0;  // queue order: smaller is earlier
  Instant since{};
};

}  // namespace clk::lock
