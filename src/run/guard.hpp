// The guard: a tiny process, started before the child, that kills the child's
// whole process group if clock dies. PR_SET_PDEATHSIG reaches the child only
// (and not at all once it execs a set-uid program); the guard also catches the
// grandchildren that stay in the group. It is the guard program (clock-guard,
// installed beside the PostgreSQL module) when clock finds it, else a fork of
// clock.
#pragma once

#include <sys/types.h>

namespace clk::run {

class Guard {
 public:
  // Starts the guard. It leads a new process group, which the child joins; it
  // ignores the forwarded and job-control signals sent to that group, and
  // waits on a socket whose other end only clock holds: end-of-file means
  // clock died, so it sends SIGKILL to the group. Blocks signals around its
  // start; call before any thread is started.
  Guard();
  ~Guard();  // stand_down(), then reaps the guard
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;

  // The process group the child joins (the guard's pid). The first call
  // waits until the guard program reports that it guards (it started beside
  // clock, and has long done so by the time clock asks); if it could not
  // start, a fork of clock guards instead.
  pid_t process_group();

  // Clock is finishing normally: makes the guard exit without killing
  // anything (SIGKILL: once sent, the guard runs no further instruction, so
  // it cannot mistake clock's exit for its death), without waiting for it to
  // go. Idempotent.
  void stand_down();

 private:
  // A forked guard; closes `fds` (the socket pair: the guard's end, clock's).
  void fork_guard(int fds[2]);

  pid_t m_pid = -1;
  int m_fd = -1;           // clock's end of the socket pair, close-on-exec
  bool m_reported = true;  // the guard program has said it guards (a fork needs not)
};

}  // namespace clk::run
