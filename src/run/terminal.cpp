// Foreground handover of the controlling terminal between clock and its child,
// including Ctrl-Z: without it, a stopped interactive child would leave the
// terminal to nobody and the shell waiting on clock.
#include "run/terminal.hpp"

#include <csignal>
#include <termios.h>
#include <unistd.h>

namespace clk::run {

namespace {

bool clock_in_foreground() {
  return isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
}

}  // namespace

void set_foreground(pid_t process_group) {
  struct sigaction ignore {};
  struct sigaction previous {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGTTOU, &ignore, &previous);
  tcsetpgrp(STDIN_FILENO, process_group);
  sigaction(SIGTTOU, &previous, nullptr);
}

TerminalHandover::TerminalHandover() : m_active(clock_in_foreground()) {}

TerminalHandover::~TerminalHandover() {
  take_back();
}

void TerminalHandover::give_to(pid_t process_group) {
  if (!m_active)
    return;
  set_foreground(process_group);
  m_given = true;
}

void TerminalHandover::take_back() {
  if (!m_given)
    return;
  set_foreground(getpgrp());
  m_given = false;
}

void TerminalHandover::suspend_with_child(pid_t process_group, int stop_signal) {
  if (!m_active)
    return;
  take_back();
  // Stops this process before kill() returns, unless clock's group is
  // orphaned or ignores the signal: then it just goes on.
  kill(0, stop_signal);
  if (clock_in_foreground())
    give_to(process_group);
  kill(-process_group, SIGCONT);
}

}  // namespace clk::run
