// The deadline of one statement: libpqxx 6 waits for a reply without a
// timeout, and behind pgbouncer a query for a database that is down waits in
// the pooler's queue (connect_timeout bounds only the connection). When the
// deadline passes, a helper thread shuts the connection's socket down, so the
// blocked call fails at once as a broken connection (outcome unknown), which
// the caller drops and, where the call may be repeated, retries.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace clk::store::postgres {

class StatementTimer {
 public:
  StatementTimer() = default;
  ~StatementTimer();
  StatementTimer(const StatementTimer&) = delete;
  StatementTimer& operator=(const StatementTimer&) = delete;

  // Watches socket `fd` until disarm(), shutting it down at `deadline`. The
  // thread starts on the first arm().
  void arm(int fd, std::chrono::steady_clock::time_point deadline);
  // Stops watching; returns whether the deadline had passed (the socket was shut).
  bool disarm();

 private:
  void run();

  std::mutex m_mutex;
  std::condition_variable m_changed;
  int m_fd = -1;  // -1: disarmed
  std::chrono::steady_clock::time_point m_deadline;
  bool m_fired = false;
  bool m_stopping = false;
  std::thread m_thread;
};

// Disarms on scope exit (an exception included).
class ArmedTimer {
 public:
  ArmedTimer(StatementTimer& timer, int fd, std::chrono::steady_clock::time_point deadline)
      : m_timer(timer) {
    m_timer.arm(fd, deadline);
  }
  ~ArmedTimer() {
    if (!m_done)
      m_timer.disarm();
  }
  ArmedTimer(const ArmedTimer&) = delete;
  ArmedTimer& operator=(const ArmedTimer&) = delete;
  bool disarm() {
    m_done = true;
    return m_timer.disarm();
  }

 private:
  StatementTimer& m_timer;
  bool m_done = false;
};

}  // namespace clk::store::postgres
