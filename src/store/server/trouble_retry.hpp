// How a call to a server keeps trying through server trouble (a restart, a
// failover, a Galera node lost) until its deadline: a back-off step between
// tries, a last try just before the deadline rather than a step early, a
// warning once the trouble has lasted a minute, then unavailable (69).
// PostgreSQL's Connection::guarded and MariaDB's Connection::call both loop
// on it.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "util/backoff.hpp"

namespace clk::store::server {

class TroubleRetry {
 public:
  using Clock = std::chrono::steady_clock;

  // Trying begins now and may go on until `until`.
  explicit TroubleRetry(Clock::time_point until);

  // After a try of `what` that failed with `trouble` (why another may
  // succeed): sleeps one back-off step, or throws clk::Error(unavailable)
  // with `trouble` (and how long it tried) when the deadline leaves no time
  // for another try.
  void wait_or_give_up(const std::string& trouble, std::string_view what);

 private:
  Clock::time_point m_began;
  Clock::time_point m_until;
  util::Backoff m_backoff;
  int m_retries = 0;
  bool m_warned = false;
};

}  // namespace clk::store::server
