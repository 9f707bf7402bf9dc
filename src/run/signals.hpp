// Signals while `clock run` supervises a child: the handlers only write the
// signal number to a self-pipe, and the main loop reads it and acts (forward
// to the child's process group, or reap on SIGCHLD).
#pragma once

#include <array>
#include <signal.h>
#include <vector>

namespace clk::run {

// The signals clock passes on to the child's process group (man clock, COMMANDS).
inline constexpr std::array<int, 6> k_forwarded_signals = {SIGINT,  SIGTERM, SIGHUP,
                                                           SIGQUIT, SIGUSR1, SIGUSR2};

// The forwarded signals and SIGCHLD: what the relay catches.
sigset_t relayed_signal_set();

// Catches the forwarded signals and SIGCHLD for its lifetime. One at a time
// per process: the handlers share one self-pipe.
class SignalRelay {
 public:
  // A forwarded signal clock was started with ignored (`nohup`, `cmd &` in a
  // script) stays ignored, for clock and for the child, as a shell leaves it.
  SignalRelay();
  ~SignalRelay();  // restores the dispositions found at construction
  SignalRelay(const SignalRelay&) = delete;
  SignalRelay& operator=(const SignalRelay&) = delete;

  // Readable while signals are pending.
  int fd() const { return m_read_fd; }

  // The signals received since the last call, in order of arrival.
  std::vector<int> drain();

  // In a forked child before exec, with the relayed signals blocked: puts
  // back the dispositions clock started with (ignored stays ignored, anything
  // else becomes the default). Async-signal-safe.
  void reset_in_child() const;

 private:
  static constexpr std::size_t k_count = k_forwarded_signals.size() + 1;  // + SIGCHLD
  static constexpr std::array<int, k_count> k_caught = {SIGINT,  SIGTERM, SIGHUP, SIGQUIT,
                                                        SIGUSR1, SIGUSR2, SIGCHLD};

  int m_read_fd = -1;
  int m_write_fd = -1;
  std::array<struct sigaction, k_count> m_previous{};
  std::array<bool, k_count> m_installed{};
};

// Blocks the relayed signals in the calling thread for its lifetime, so that
// none runs a handler between fork and exec, where the child still shares the
// self-pipe.
class BlockedSignals {
 public:
  BlockedSignals();  // the relayed signals
  explicit BlockedSignals(const sigset_t& set);
  ~BlockedSignals();
  BlockedSignals(const BlockedSignals&) = delete;
  BlockedSignals& operator=(const BlockedSignals&) = delete;

  // The mask before blocking: what a child restores before exec.
  const sigset_t& previous() const { return m_previous; }

 private:
  sigset_t m_previous{};
};

}  // namespace clk::run
