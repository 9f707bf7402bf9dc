// The guard: a small process, started before the child, that kills the
// child's whole process group if clock dies. PR_SET_PDEATHSIG reaches the
// child only (and not at all once it execs a set-uid program); the guard also
// catches the grandchildren that stay in the group. It is a plain fork of
// clock, in every build: the sanitizer build runs this same start path.
#pragma once

#include <optional>
#include <sys/types.h>

#include "run/job_cgroup.hpp"

namespace clk::run {

class Guard {
 public:
  // Forks the guard. It leads a new process group, which the child joins; it
  // ignores every signal that can be ignored (the group receives the
  // terminal's signals, clock's forwarded ones and any `kill -SIG -PGID`, and
  // only the command should act on them), and waits on a socket whose other
  // end only clock holds: end-of-file means clock died, so it sends SIGKILL
  // to the group. Where clock may make a cgroup for the job (job_cgroup.hpp),
  // it makes it first, and the guard then also kills that cgroup whole and
  // removes it. Call before any thread is started.
  Guard();
  ~Guard();  // stand_down(), then reaps the guard
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;

  // The process group the child joins (the guard's pid).
  pid_t process_group() const { return m_pid; }

  // The job's cgroup, which the child joins; null where there is none.
  const JobCgroup* cgroup() const { return m_cgroup ? &*m_cgroup : nullptr; }

  // Clock is finishing normally: makes the guard exit without killing
  // anything (SIGKILL: once sent, the guard runs no further instruction, so
  // it cannot mistake clock's exit for its death), without waiting for it to
  // go; then removes the job's cgroup (the job is over). Idempotent.
  void stand_down();

 private:
  std::optional<JobCgroup> m_cgroup;  // first: the guard is forked knowing it
  pid_t m_pid = -1;
  int m_fd = -1;  // clock's end of the socket pair, close-on-exec
};

}  // namespace clk::run
