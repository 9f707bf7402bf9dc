// See statement_timer.hpp. shutdown(2), unlike close(2), leaves the
// descriptor to its owner (libpq), so the blocked read just sees the end of
// the stream and nothing can reuse the number under libpq's feet.
#include "store/postgres/statement_timer.hpp"

#include <csignal>
#include <pthread.h>
#include <sys/socket.h>

namespace clk::store::postgres {

StatementTimer::~StatementTimer() {
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
  }
  m_changed.notify_all();
  if (m_thread.joinable())
    m_thread.join();
}

void StatementTimer::arm(int fd, std::chrono::steady_clock::time_point deadline) {
  {
    std::lock_guard lock(m_mutex);
    m_fd = fd;
    m_deadline = deadline;
    m_fired = false;
    if (!m_thread.joinable()) {
      // Signals belong to the threads that relay them (clock run's main loop).
      sigset_t all;
      sigset_t previous;
      sigfillset(&all);
      pthread_sigmask(SIG_BLOCK, &all, &previous);
      m_thread = std::thread([this] { run(); });
      pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    }
  }
  m_changed.notify_all();
}

bool StatementTimer::disarm() {
  std::lock_guard lock(m_mutex);
  m_fd = -1;
  return m_fired;
}

void StatementTimer::run() {
  std::unique_lock lock(m_mutex);
  while (!m_stopping) {
    if (m_fd < 0) {
      m_changed.wait(lock);
      continue;
    }
    if (std::chrono::steady_clock::now() < m_deadline) {
      m_changed.wait_until(lock, m_deadline);
      continue;
    }
    ::shutdown(m_fd, SHUT_RDWR);
    m_fired = true;
    m_fd = -1;
  }
}

}  // namespace clk::store::postgres
