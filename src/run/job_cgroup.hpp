// A cgroup of the job's own, where clock may make one: a child of clock's
// cgroup v2 directory, when that directory is writable (root, or a subtree
// delegated to clock's user) and the kernel has cgroup.kill (Linux 5.14).
// The command starts in it (clone3's CLONE_INTO_CGROUP; where a seccomp
// filter refuses clone3, it moves in before exec), so everything it starts
// is in it; the guard kills the cgroup whole if clock dies, which reaches
// the processes that left the command's process group, and outlives
// clock's SIGKILL.
#pragma once

#include <optional>
#include <string>

namespace clk::run {

class JobCgroup {
 public:
  // Makes clock-job-PID under clock's cgroup; none (and one debug line
  // saying why) where it cannot.
  static std::optional<JobCgroup> create();

  JobCgroup(JobCgroup&& other) noexcept;
  JobCgroup& operator=(JobCgroup&&) = delete;
  JobCgroup(const JobCgroup&) = delete;
  ~JobCgroup();  // remove(), then closes its files

  // The directory, open: clone3 starts the command in it.
  int dir_fd() const { return m_dir_fd; }
  // Written "0" by the command between fork and exec: moves it in, where
  // clone3 could not start it there.
  int procs_fd() const { return m_procs_fd; }
  // Written "1": SIGKILL to every process in the cgroup, atomically.
  int kill_fd() const { return m_kill_fd; }
  const std::string& path() const { return m_path; }

  // SIGKILL to every process in it.
  void kill() const;

  // Removes the directory once the job is gone (killing what is left, if
  // anything, and waiting up to a second for it). Idempotent.
  void remove();

 private:
  JobCgroup(std::string path, int dir_fd, int procs_fd, int kill_fd);

  std::string m_path;
  int m_dir_fd = -1;
  int m_procs_fd = -1;
  int m_kill_fd = -1;
};

// In the guard after clock's death, async-signal-safe: writes "1" to
// `kill_fd`, then tries to remove `path` for up to a few seconds while the
// killed processes go.
void kill_and_remove_cgroup(int kill_fd, const char* path);

}  // namespace clk::run
