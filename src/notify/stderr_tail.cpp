// StderrTail: a pipe in place of fd 2 and a thread that copies it through.
#include "notify/stderr_tail.hpp"

#include <cerrno>
#include <chrono>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

namespace clk::notify {

namespace {

// The grace after stop() for what is still in the pipe.
constexpr std::chrono::milliseconds k_drain{200};

void write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t written = write(fd, data, size);
    if (written < 0 && errno == EINTR)
      continue;
    if (written <= 0)
      return;  // the original stderr is gone: the tail is still kept
    data += written;
    size -= static_cast<std::size_t>(written);
  }
}

}  // namespace

StderrTail::StderrTail(std::size_t keep) : m_keep(keep) {}

StderrTail::~StderrTail() {
  if (m_saved >= 0)
    stop();
}

void StderrTail::start() {
  if (m_saved >= 0 || isatty(STDERR_FILENO))
    return;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return;
  m_saved = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
  if (m_saved < 0 || dup2(fds[1], STDERR_FILENO) < 0) {
    close(fds[0]);
    close(fds[1]);
    if (m_saved >= 0)
      close(m_saved);
    m_saved = -1;
    return;
  }
  close(fds[1]);  // fd 2 is now the only write end (dup2 clears close-on-exec)
  m_read = fds[0];
  m_thread = std::thread([this] { copy(m_read); });
}

void StderrTail::copy(int from) {
  char buffer[4096];
  auto drain_until = std::chrono::steady_clock::time_point::max();
  for (;;) {
    int timeout = 100;
    {
      std::lock_guard lock(m_mutex);
      if (m_stopping && drain_until == std::chrono::steady_clock::time_point::max())
        drain_until = std::chrono::steady_clock::now() + k_drain;
    }
    if (std::chrono::steady_clock::now() >= drain_until)
      return;
    pollfd ready{from, POLLIN, 0};
    int polled = poll(&ready, 1, timeout);
    if (polled < 0 && errno != EINTR)
      return;
    if (polled <= 0)
      continue;
    ssize_t got = read(from, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return;  // every writer closed it
    write_all(m_saved, buffer, static_cast<std::size_t>(got));
    std::lock_guard lock(m_mutex);
    m_tail.append(buffer, static_cast<std::size_t>(got));
    if (m_tail.size() > 2 * m_keep)
      m_tail.erase(0, m_tail.size() - m_keep);
  }
}

std::string StderrTail::stop() {
  if (m_saved < 0)
    return "";
  dup2(m_saved, STDERR_FILENO);  // closes the pipe's write end held as fd 2
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
  }
  m_thread.join();
  close(m_read);
  close(m_saved);
  m_read = m_saved = -1;
  std::lock_guard lock(m_mutex);
  if (m_tail.size() > m_keep)
    m_tail.erase(0, m_tail.size() - m_keep);
  return m_tail;
}

}  // namespace clk::notify
