// The controlling terminal during `clock run`: an interactive child gets the
// terminal's foreground (so it can read it, and Ctrl-C reaches it directly),
// and clock takes it back when the child stops or exits.
#pragma once

#include <sys/types.h>

namespace clk::run {

// Makes `process_group` the foreground group of the terminal on stdin, with
// SIGTTOU ignored for the call (a background caller would otherwise be
// stopped). Async-signal-safe, for use between fork and exec too.
void set_foreground(pid_t process_group);

class TerminalHandover {
 public:
  // Decides once, before the child is forked: clock hands over the terminal
  // only if stdin is a terminal and clock's group is its foreground group.
  TerminalHandover();
  ~TerminalHandover();  // take_back()
  TerminalHandover(const TerminalHandover&) = delete;
  TerminalHandover& operator=(const TerminalHandover&) = delete;

  bool active() const { return m_active; }

  // Gives the foreground to the child's group; no-op when not active.
  void give_to(pid_t process_group);

  // Gives the foreground back to clock's group, if it was given away.
  void take_back();

  // The child was stopped (Ctrl-Z): take the terminal back and stop clock's
  // own group with the same signal, so the shell sees the job stopped; once
  // continued (`fg` or `bg`), give the terminal back if clock is in the
  // foreground again, and continue the child's group.
  void suspend_with_child(pid_t process_group, int stop_signal);

 private:
  bool m_active = false;
  bool m_given = false;
};

}  // namespace clk::run
