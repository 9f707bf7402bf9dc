// How a PostgreSQL waiter waits between attempts (wait_for_change): on its
// connection, LISTENing on the schema's channel, when it stands among the
// first of its queue; otherwise with no connection, looking again when the
// queue's speed says it is due among them. Borrowed, not held (man clock,
// COMMANDS): a queue of 200 waiters keeps a handful of server connections.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "store/postgres/connection.hpp"
#include "util/random_seed.hpp"

namespace clk::store::postgres {

class QueueWait {
 public:
  using steady_clock = std::chrono::steady_clock;
  using milliseconds = std::chrono::milliseconds;

  // Waits on `conn` (the session's), for notifications on `channel`.
  QueueWait(Connection& conn, std::string channel);

  // What the last blocked attempt said (queue_wait.cpp): the earliest
  // expiry in the way, the entries ahead, this waiter's and the first
  // one's positions.
  void blocked_until(std::optional<steady_clock::time_point> next_expiry, std::string owner,
                     std::optional<int> ahead, std::optional<std::int64_t> mine,
                     std::optional<std::int64_t> front);
  // Until a change may let the waiter in, or `until`.
  void wait_for_change(steady_clock::time_point until);

  static constexpr int k_listeners = 3;
  static constexpr int k_listeners_while_moving = 8;
  // A queue whose first entry has not changed for this long stands still.
  static constexpr milliseconds k_standing_still{1000};
  static constexpr milliseconds k_pace_step{20};
  static constexpr milliseconds k_pace_least{10};
  static constexpr milliseconds k_pace_moving{30};
  static constexpr milliseconds k_pace_cap{1000};

 private:
  bool listens_while_moving(steady_clock::time_point now) const;
  int listeners_ahead();
  steady_clock::duration pace();

  Connection& m_conn;
  std::string m_channel;
  std::optional<steady_clock::time_point> m_next_expiry;  // see blocked_until()
  std::string m_owner;                                    // the waiting request's
  int m_ahead = 0;                      // queue entries ahead of ours at the last blocked attempt
  int m_unmoved = 0;                    // blocked attempts in a row that found m_front unchanged
  steady_clock::time_point m_looked{};  // when that attempt answered
  std::optional<std::int64_t> m_mine;   // this waiter's queue position (fast paths only)
  std::optional<std::int64_t> m_front;  // the first entry ahead's position
  steady_clock::time_point m_front_since{};  // when an attempt last saw m_front change
  std::optional<double> m_rate;              // positions a second the front moved by before it
  bool m_notified = true;                    // whether notifications reach this store's connections
  std::minstd_rand m_random{util::random_seed()};
};

}  // namespace clk::store::postgres
