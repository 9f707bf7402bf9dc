// How often a MariaDB waiter looks again. MariaDB has no LISTEN/NOTIFY, so
// a release wakes nobody: the first waiter of a queue polls with its next
// attempt, every 8-12 ms for its first second at the front (a queue of
// short jobs hands over at that pace) and every 25-30 ms after (a long
// job's waiters cost the server less; the hand-over takes half that),
// and each later waiter looks less often the further back it stands and the
// longer the queue stands still, so 200 waiters cost the server a few dozen
// statements a second, most of them the first waiter's (docs/internals/mariadb.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>

#include "store/store.hpp"
#include "util/random_seed.hpp"

namespace clk::store::mariadb {

class WaitingPace {
 public:
  using Clock = std::chrono::steady_clock;

  // What a blocked attempt said: the waiters ahead, the caller's own queue
  // position where the reply names it (a re-attempt's fast path counts those
  // ahead only up to k_waiters_ahead_counted: past it, how far back in
  // positions), and how long until the first lease or queue entry in the way
  // expires (none: never).
  void blocked(const Attempt& attempt, std::optional<std::int64_t> mine,
               std::optional<std::chrono::microseconds> next_expiry_in);

  // How long to wait before the next attempt.
  Clock::duration next_look(Clock::time_point now);

  static constexpr std::chrono::milliseconds k_quick_least{8};
  static constexpr std::chrono::milliseconds k_quick_most{12};
  static constexpr std::chrono::milliseconds k_quick_for{1000};
  static constexpr std::chrono::milliseconds k_first_least{25};
  static constexpr std::chrono::milliseconds k_first_most{30};
  static constexpr std::chrono::milliseconds k_step{20};   // per waiter ahead, while it moves
  static constexpr std::chrono::milliseconds k_cap{1000};  // per waiter ahead, standing still

 private:
  int m_ahead = 0;
  int m_unmoved = 0;  // looks in a row that found the same first waiter ahead
  std::optional<std::int64_t> m_front;
  std::optional<Clock::time_point> m_next_expiry;
  std::optional<Clock::time_point> m_first_since;  // when it last found no waiter ahead
  std::minstd_rand m_random{util::random_seed()};
};

}  // namespace clk::store::mariadb
