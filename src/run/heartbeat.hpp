// The heartbeat of `clock run`: a thread that renews the lease every
// --heartbeat, retries an unavailable backend with jittered backoff, checks
// between renewals that the lease is still held where that is cheap, gives
// the backend's connection back between renewals (each renewal borrows one),
// and tells the main loop when a renewal succeeded or the lease was lost.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "run/options.hpp"

namespace clk::run {

class Heartbeat {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  // Starts the thread; the first renewal is due one --heartbeat after
  // `first_renewal_start`. `options` and `lease` must outlive the Heartbeat.
  // Start it only after every fork.
  Heartbeat(const RunOptions& options, const LeaseKeeping& lease, time_point first_renewal_start);
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

  // The last moment the lease is known to have been held: the start of the
  // last successful renewal or of the last check that found it held (or the
  // grant). A loss found later happened after it.
  time_point last_held() const;

  // A renewal or a check found the lease gone or another owner's.
  bool lost() const;

 private:
  void run();
  RenewOutcome attempt();
  bool check(std::unique_lock<std::mutex>& lock);
  void renewal_failed(int failures, milliseconds delay);
  std::string what_is_at_stake(time_point now) const;
  std::string lease() const;
  void announce();

  const RunOptions& m_options;
  const LeaseKeeping& m_lease;
  int m_news_fd = -1;
  std::string m_trouble;  // why the last renewal failed, in our words (heartbeat thread only)

  mutable std::mutex m_mutex;
  std::condition_variable m_wake;
  bool m_stopping = false;
  time_point m_last_renewal_start;
  time_point m_last_held;
  bool m_lost = false;

  std::thread m_thread;  // last: started once everything above exists
};

}  // namespace clk::run
