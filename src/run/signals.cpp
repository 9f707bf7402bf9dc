// The self-pipe signal relay of `clock run`, and the signal blocking that
// keeps handlers out of the window between fork and exec.
#include "run/signals.hpp"

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <system_error>
#include <unistd.h>

#include "error.hpp"

namespace clk::run {

namespace {

// The handler's only state: the self-pipe's write end (-1 when no relay).
volatile std::sig_atomic_t g_relay_write_fd = -1;

extern "C" void relay_handler(int signo) {
  int saved_errno = errno;
  unsigned char byte = static_cast<unsigned char>(signo);
  // A full pipe drops the byte; the loop is awake anyway and reaps by waitpid.
  [[maybe_unused]] auto ignored = write(g_relay_write_fd, &byte, 1);
  errno = saved_errno;
}

bool is_ignored(const struct sigaction& action) {
  return !(action.sa_flags & SA_SIGINFO) && action.sa_handler == SIG_IGN;
}

[[noreturn]] void fail_signal_setup(const char* what) {
  throw Error(ExitCode::internal, std::string("cannot set up signal handling for the command: ") +
                                      what + ": " + std::generic_category().message(errno));
}

}  // namespace

sigset_t relayed_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int signo : k_forwarded_signals)
    sigaddset(&set, signo);
  sigaddset(&set, SIGCHLD);
  return set;
}

SignalRelay::SignalRelay() {
  if (g_relay_write_fd != -1) {
    throw Error(ExitCode::internal, "a second signal relay was started in one process");
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
    fail_signal_setup("pipe");
  m_read_fd = fds[0];
  m_write_fd = fds[1];
  g_relay_write_fd = m_write_fd;

  struct sigaction action {};
  action.sa_handler = relay_handler;
  sigfillset(&action.sa_mask);
  // SA_RESTART: the store's blocking calls on other paths are not disturbed;
  // poll() in the main loop still returns, and the pipe wakes it regardless.
  action.sa_flags = SA_RESTART;
  for (std::size_t i = 0; i < k_count; ++i) {
    sigaction(k_caught[i], nullptr, &m_previous[i]);
    if (k_caught[i] != SIGCHLD && is_ignored(m_previous[i]))
      continue;
    if (sigaction(k_caught[i], &action, nullptr) != 0)
      fail_signal_setup("sigaction");
    m_installed[i] = true;
  }
}

SignalRelay::~SignalRelay() {
  for (std::size_t i = 0; i < k_count; ++i) {
    if (m_installed[i])
      sigaction(k_caught[i], &m_previous[i], nullptr);
  }
  g_relay_write_fd = -1;
  close(m_read_fd);
  close(m_write_fd);
}

std::vector<int> SignalRelay::drain() {
  std::vector<int> signals;
  unsigned char buffer[64];
  for (;;) {
    ssize_t n = read(m_read_fd, buffer, sizeof buffer);
    if (n > 0) {
      signals.insert(signals.end(), buffer, buffer + n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return signals;  // EAGAIN: empty
    }
  }
}

void SignalRelay::reset_in_child() const {
  for (std::size_t i = 0; i < k_count; ++i) {
    struct sigaction action {};
    action.sa_handler = is_ignored(m_previous[i]) ? SIG_IGN : SIG_DFL;
    sigemptyset(&action.sa_mask);
    sigaction(k_caught[i], &action, nullptr);
  }
}

BlockedSignals::BlockedSignals() : BlockedSignals(relayed_signal_set()) {}

BlockedSignals::BlockedSignals(const sigset_t& set) {
  pthread_sigmask(SIG_BLOCK, &set, &m_previous);
}

BlockedSignals::~BlockedSignals() {
  pthread_sigmask(SIG_SETMASK, &m_previous, nullptr);
}

}  // namespace clk::run
