// The heartbeat of `clock run`: a thread that renews the lease every
// --heartbeat, retries an unavailable backend with jittered backoff, and
// tells the main loop when a renewal succeeded or the lease was lost.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "run/options.hpp"

namespace clk::run {

class Heartbeat {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  // Starts the thread; the first renewal is due one interval after
  // `first_renewal_start`. `renew` must outlive the Heartbeat. Start it only
  // after every fork.
  Heartbeat(const Renew& renew, milliseconds interval, time_point first_renewal_start);
  ~Heartbeat();  // stop()
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  // Asks the thread to finish; returns at once.
  void request_stop();

  // Asks the thread to finish and waits for it, including a renewal in
  // flight (the caller goes on to use the store that renews).
  void stop();

  // Readable after a renewal succeeded or the lease was lost.
  int fd() const { return m_news_fd; }

  // Empties fd().
  void clear_news();

  // The start of the last successful renewal (or of the grant).
  time_point last_renewal_start() const;

  // A renewal found the lease gone or another owner's.
  bool lost() const;

 private:
  void run();
  RenewOutcome attempt();
  void announce();

  const Renew& m_renew;
  const milliseconds m_interval;
  int m_news_fd = -1;

  mutable std::mutex m_mutex;
  std::condition_variable m_wake;
  bool m_stopping = false;
  time_point m_last_renewal_start;
  bool m_lost = false;

  std::thread m_thread;  // last: started once everything above exists
};

}  // namespace clk::run
