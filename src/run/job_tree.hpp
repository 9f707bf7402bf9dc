// The whole job: every process the command started, wherever it went.
// clock is the child subreaper of its job (PR_SET_CHILD_SUBREAPER), so a
// process that leaves the command's process group or session (setsid, a
// double fork, a daemon) is re-parented to clock, not to init, when its
// parent exits. The job is then exactly clock's descendants other than the
// guard, and the last of them to exit is clock's child: its SIGCHLD tells
// clock the job is over. As a container's PID 1 clock is every orphan's
// parent anyway; the same code reaps them.
#pragma once

#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace clk::run {

class JobCgroup;

// Makes this process the child subreaper of its descendants, for the rest of
// its life. False when the kernel refuses (before Linux 3.4).
bool become_subreaper();

class JobTree {
 public:
  // `guard`: the guard's pid, which is clock's child but never the job's.
  // Reads /proc only if it shows clock's own pid namespace (a container that
  // kept its host's /proc does not): otherwise members() is none.
  // `cgroup`: the job's cgroup, or null; SIGKILL goes to it whole too.
  JobTree(pid_t guard, const JobCgroup* cgroup);

  // Reaps the job's processes that have exited while re-parented to clock,
  // so that none stays a zombie; `command` (reaped by its own wait, for its
  // status) is left alone. -1: the command is already reaped. Returns
  // clock's children that are left, but the guard and `command`: once the
  // command is reaped, the processes at the top of what is left (all the
  // others are their descendants), what --leftovers names; none when /proc
  // cannot tell. One look at /proc serves both.
  std::optional<std::vector<pid_t>> reap_orphans(pid_t command) const;

  // The job's processes, parents before their children (a zombie whose
  // parent lives is listed too); none when /proc cannot tell.
  std::optional<std::vector<pid_t>> members() const;

  // `roots` (from reap_orphans) and all their descendants, parents first.
  std::vector<pid_t> with_descendants(std::vector<pid_t> roots) const;

  // Sends `signo` to every process of the job (SIGKILL: first to the job's
  // cgroup, at once and whole, where there is one). A process re-parented to clock
  // cannot be mistaken (its pid stays its own until clock reaps it); one
  // deeper down could exit and its pid be reused between the listing and the
  // kill, a window of microseconds.
  // `skip_group`: a process group already signalled as a whole (kill(-pgid)),
  // whose members must not get the signal twice (a shell's trap would run
  // twice); 0: none.
  void signal_all(int signo, pid_t skip_group = 0) const;

  // A process's command line as `ps -o args` shows it (its arguments joined
  // by spaces, cut at 200 bytes), else its name ("[sleep]"), else "?".
  static std::string command_of(pid_t pid);

  // "4242 (sleep), 4243 (sh)" for messages: at most `limit` of them, then "…".
  static std::string describe(const std::vector<pid_t>& pids, std::size_t limit = 5);

 private:
  std::vector<pid_t> children_of(pid_t pid) const;

  pid_t m_self;
  pid_t m_guard;
  const JobCgroup* m_cgroup;
  bool m_visible;        // /proc shows our own pid namespace
  bool m_children_file;  // /proc/PID/task/TID/children exists (CONFIG_PROC_CHILDREN)
};

}  // namespace clk::run
