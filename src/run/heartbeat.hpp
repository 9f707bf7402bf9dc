// The heartbeat of `clock run`: a thread that renews the lease every
// --heartbeat, retries an unavailable backend with jittered backoff, checks
// between renewals that the lease is still held where that is cheap, gives
// the backend's connection back between renewals (each renewal borrows one),
// and tells the main loop when a renewal succeeded or the lease was lost.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "lock/lease.hpp"
#include "run/options.hpp"

namespace clk::run {

class Heartbeat {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  // The first renewal is due one --heartbeat after `first_renewal_start`.
  // The thread starts only when its first renewal, check or rest is due
  // (start_due()): most jobs under a lock are shorter than that, and a
  // thread costs a short run a tenth of a millisecond (its creation, its
  // malloc arena, and the TLB shootdowns every later munmap then needs).
  // `options` and `lease` must outlive the Heartbeat.
  Heartbeat(const RunOptions& options, const LeaseKeeping& lease, time_point first_renewal_start);
  ~Heartbeat();  // stop()
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  // When the thread must be started, by start(); none once it runs.
  std::optional<time_point> start_due() const;

  // Starts the thread (once). Call it only after every fork.
  void start();

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

  // Has the thread record `leftovers` on the lease (LeaseKeeping::
  // note_leftovers) as soon as it can, replacing a list not yet recorded;
  // one that fails is tried again after the next renewal. Needs the thread
  // started.
  void note_leftovers(std::vector<lock::Leftover> leftovers);

 private:
  void run();
  RenewOutcome attempt();
  bool check(std::unique_lock<std::mutex>& lock);
  void write_note(std::unique_lock<std::mutex>& lock);
  void renewal_failed(int failures, milliseconds delay);
  std::string what_is_at_stake(time_point now) const;
  std::string lease() const;
  void announce();

  const RunOptions& m_options;
  const LeaseKeeping& m_lease;
  int m_news_fd = -1;
  std::string m_trouble;     // why the last renewal failed, in our words (heartbeat thread only)
  time_point m_first_check;  // max: no checks
  time_point m_first_rest;   // max: nothing to give back
  time_point m_start_due;    // the earliest of the above and the first renewal

  mutable std::mutex m_mutex;
  std::condition_variable m_wake;
  bool m_stopping = false;
  time_point m_last_renewal_start;
  time_point m_last_held;
  bool m_lost = false;
  std::vector<lock::Leftover> m_note;  // the leftovers to record on the lease
  bool m_note_due = false;             // m_note is to be written now
  bool m_note_failed = false;          // m_note is to be written after the next renewal

  bool m_started = false;  // start() or stop() was called (main thread only)
  std::thread m_thread;    // last: started once everything above exists
};

}  // namespace clk::run
