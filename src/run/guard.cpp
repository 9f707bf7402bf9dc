// The guard process: a fork of clock that kills the child's process group
// when clock dies; clock stands it down with SIGKILL when it finishes
// normally.
#include "run/guard.hpp"

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <string>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <system_error>
#include <unistd.h>

#include "error.hpp"
#include "run/signals.hpp"

namespace clk::run {

namespace {

// The guard's end of the socket pair, in the guard, and the job's
// cgroup.kill (or nothing) after it.
constexpr int k_guard_fd = 3;
constexpr int k_cgroup_kill_fd = 4;

// One policy, whatever signal reaches the group: only SIGKILL (and SIGSTOP)
// act on the guard. Signals pending since the fork are discarded by being
// ignored; then nothing stays blocked.
void ignore_all_signals() {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  for (int signo = 1; signo < NSIG; ++signo) {
    if (signo != SIGKILL && signo != SIGSTOP)
      sigaction(signo, &ignore, nullptr);  // the C library's own ones refuse: fine
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

// Keeps only the socket, as fd 3, and the cgroup's kill file, as fd 4: the
// guard must not hold clock's database connection, or a pipe a reader waits
// on, for longer than clock does. Returns the last fd kept.
int close_all_but(int fd, int kill_fd) {
  // Out of the way first, so that neither dup2 overwrites the other.
  const int high = 100;
  int moved = fcntl(fd, F_DUPFD, high);
  int moved_kill = kill_fd >= 0 ? fcntl(kill_fd, F_DUPFD, high) : -1;
  dup2(moved, k_guard_fd);
  int last = k_guard_fd;
  if (moved_kill >= 0) {
    dup2(moved_kill, k_cgroup_kill_fd);
    last = k_cgroup_kill_fd;
  }
  for (int low = 0; low < k_guard_fd; ++low)
    close(low);
  if (close_range(static_cast<unsigned>(last) + 1, ~0U, 0) != 0) {
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536)
      max = 65536;
    for (int other = last + 1; other < max; ++other)
      close(other);
  }
  return last;
}

// The forked child: only async-signal-safe calls, then _exit. `cgroup_path`:
// the job's cgroup, or null.
[[noreturn]] void run_guard(int fd, int kill_fd, const char* cgroup_path) {
  ignore_all_signals();
  setpgid(0, 0);
  bool has_cgroup = close_all_but(fd, cgroup_path ? kill_fd : -1) == k_cgroup_kill_fd;
  prctl(PR_SET_NAME, "clock-guard", 0, 0, 0);
  char byte;
  for (;;) {
    ssize_t n = read(k_guard_fd, &byte, 1);
    if (n == 1)
      _exit(0);  // nothing writes here (clock stands the guard down with SIGKILL)
    if (n < 0 && errno == EINTR)
      continue;
    break;  // end-of-file or error: clock is gone
  }
  // Only ever our own group: never the group clock was started in, which may
  // hold the rest of a pipeline.
  if (has_cgroup)
    kill_and_remove_cgroup(k_cgroup_kill_fd, cgroup_path);  // what left the group too
  if (getpgrp() == getpid())
    kill(0, SIGKILL);
  _exit(0);
}

[[noreturn]] void fail_guard_start(const char* what) {
  throw Error(ExitCode::cannot_execute, std::string("cannot start the command's guard process: ") +
                                            what + ": " + std::generic_category().message(errno) +
                                            "; check the process limits");
}

sigset_t all_signals() {
  sigset_t all;
  sigfillset(&all);
  return all;
}

}  // namespace

Guard::Guard() : m_cgroup(JobCgroup::create()) {
  const int kill_fd = m_cgroup ? m_cgroup->kill_fd() : -1;
  const char* cgroup_path = m_cgroup ? m_cgroup->path().c_str() : nullptr;
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    fail_guard_start("socketpair");
  pid_t pid;
  {
    // No handler of clock's may run in the guard before it ignores them all.
    BlockedSignals blocked(all_signals());
    pid = fork();
    if (pid == 0) {
      close(fds[1]);
      run_guard(fds[0], kill_fd, cgroup_path);
    }
  }
  if (pid < 0) {
    int saved = errno;
    close(fds[0]);
    close(fds[1]);
    errno = saved;
    fail_guard_start("fork");
  }
  close(fds[0]);
  m_pid = pid;
  m_fd = fds[1];
  // Here too, not only in the guard: the group must exist before the child is
  // forked to join it, whichever process the scheduler runs first.
  if (setpgid(pid, pid) != 0 && errno != EACCES) {
    int saved = errno;
    stand_down();
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    m_pid = -1;
    errno = saved;
    fail_guard_start("setpgid");
  }
}

Guard::~Guard() {
  stand_down();
  if (m_pid > 0) {
    while (waitpid(m_pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    m_pid = -1;
  }
}

void Guard::stand_down() {
  if (m_fd < 0)
    return;
  // Not a message it must wake up to read: the kernel ends it at once, and
  // clock need not wait for it to be scheduled. An unreaped child cannot
  // have its pid reused, so this never hits another process.
  kill(m_pid, SIGKILL);
  close(m_fd);
  m_fd = -1;
  if (m_cgroup)
    m_cgroup->remove();
}

}  // namespace clk::run
