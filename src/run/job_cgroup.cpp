// The job's cgroup: found from /proc/self/cgroup and the cgroup2 mount in
// /proc/self/mountinfo, made with mkdir, ended with cgroup.kill, removed
// with rmdir once empty.
#include "run/job_cgroup.hpp"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <sstream>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <utility>

#include <spdlog/spdlog.h>

#include "util/proc_file.hpp"

namespace clk::run {

namespace {

// Clock's cgroup v2 path ("0::/PATH" in /proc/self/cgroup).
std::optional<std::string> own_cgroup() {
  auto text = util::read_proc_file("/proc/self/cgroup");
  if (!text)
    return std::nullopt;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("0::/"))
      return line.substr(3);
  }
  return std::nullopt;
}

// Where the cgroup2 hierarchy is mounted, if its root is mounted (a bind
// mount of a subtree is not used).
std::optional<std::string> cgroup2_mount() {
  auto text = util::read_proc_file("/proc/self/mountinfo");
  if (!text)
    return std::nullopt;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    auto dash = line.find(" - ");
    if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0)
      continue;
    // ID PARENT MAJ:MIN ROOT MOUNTPOINT ...
    std::istringstream fields(line.substr(0, dash));
    std::string id, parent, device, root, mountpoint;
    fields >> id >> parent >> device >> root >> mountpoint;
    if (root == "/" && !mountpoint.empty())
      return mountpoint;
  }
  return std::nullopt;
}

// Whether systemd manages the cgroup tree (sd_booted()'s test): then a
// unit's cgroup is systemd's, and only a subtree it delegated (Delegate=yes)
// may be given children by anyone else.
bool systemd_manages_cgroups() {
  return access("/run/systemd/system", F_OK) == 0;
}

// Whether `cgroup` (a path under the hierarchy mounted at `mount`) lies in
// a subtree systemd delegated: it marks the top of one with the extended
// attribute trusted.delegate (user.delegate for a user's manager) since
// systemd 251. An older systemd marks nothing: its delegated subtrees are
// not recognised, and clock goes without a job cgroup there.
bool delegated(const std::string& mount, std::string cgroup) {
  char value[8];
  while (!cgroup.empty() && cgroup != "/") {
    const std::string dir = mount + cgroup;
    for (const char* name : {"trusted.delegate", "user.delegate"}) {
      auto size = getxattr(dir.c_str(), name, value, sizeof value);
      if (size == 1 && value[0] == '1')
        return true;
    }
    cgroup.erase(cgroup.rfind('/'));
  }
  return false;
}

void pause_10ms() {
  timespec delay{0, 10'000'000};
  nanosleep(&delay, nullptr);
}

}  // namespace

std::optional<JobCgroup> JobCgroup::create() {
  auto cgroup = own_cgroup();
  auto mount = cgroup ? cgroup2_mount() : std::nullopt;
  if (!mount) {
    spdlog::debug("no cgroup of its own for the job: no cgroup v2 hierarchy found");
    return std::nullopt;
  }
  std::string dir = *mount + (*cgroup == "/" ? "" : *cgroup);
  // Moving the command in needs write access to the cgroup.procs of clock's
  // cgroup (the common ancestor) and of the new one.
  if (access(dir.c_str(), W_OK) != 0 || access((dir + "/cgroup.procs").c_str(), W_OK) != 0) {
    spdlog::debug("no cgroup of its own for the job: {} is not writable (not delegated)", dir);
    return std::nullopt;
  }
  // A unit's cgroup (cron.service's, say) belongs to systemd: a child made
  // in it without Delegate=yes is outside systemd's delegation contract.
  if (systemd_manages_cgroups() && !delegated(*mount, *cgroup)) {
    spdlog::debug(
        "no cgroup of its own for the job: systemd manages {} and has not delegated it "
        "(Delegate=yes; docs/whole-job.md)",
        dir);
    return std::nullopt;
  }
  std::string path = dir + "/clock-job-" + std::to_string(getpid());
  // One of that name is left by an earlier clock of this pid whose guard
  // died with it (kill -9 of the whole group, the OOM killer): removed when
  // empty, as it then is, and made anew. Otherwise every later clock given
  // that pid would run its job without a cgroup.
  bool made = mkdir(path.c_str(), 0755) == 0;
  if (!made && errno == EEXIST && rmdir(path.c_str()) == 0) {
    spdlog::debug("removed {}, left empty by an earlier clock of this pid", path);
    made = mkdir(path.c_str(), 0755) == 0;
  }
  if (!made) {
    spdlog::debug("no cgroup of its own for the job: mkdir {}: {}", path, strerror(errno));
    return std::nullopt;
  }
  int dir_fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int procs = ::open((path + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  int kill = ::open((path + "/cgroup.kill").c_str(), O_WRONLY | O_CLOEXEC);
  if (dir_fd < 0 || procs < 0 || kill < 0) {
    spdlog::debug("no cgroup of its own for the job: {}{}: {}", path,
                  dir_fd < 0  ? ""
                  : procs < 0 ? "/cgroup.procs"
                              : "/cgroup.kill",
                  strerror(errno));
    for (int fd : {dir_fd, procs, kill}) {
      if (fd >= 0)
        ::close(fd);
    }
    rmdir(path.c_str());
    return std::nullopt;
  }
  spdlog::debug("the job runs in the cgroup {}", path);
  return JobCgroup(std::move(path), dir_fd, procs, kill);
}

JobCgroup::JobCgroup(std::string path, int dir_fd, int procs_fd, int kill_fd)
    : m_path(std::move(path)), m_dir_fd(dir_fd), m_procs_fd(procs_fd), m_kill_fd(kill_fd) {}

JobCgroup::JobCgroup(JobCgroup&& other) noexcept
    : m_path(std::move(other.m_path)),
      m_dir_fd(std::exchange(other.m_dir_fd, -1)),
      m_procs_fd(std::exchange(other.m_procs_fd, -1)),
      m_kill_fd(std::exchange(other.m_kill_fd, -1)) {
  other.m_path.clear();
}

JobCgroup::~JobCgroup() {
  remove();
  for (int fd : {m_dir_fd, m_procs_fd, m_kill_fd}) {
    if (fd >= 0)
      ::close(fd);
  }
}

void JobCgroup::kill() const {
  if (m_kill_fd >= 0) [[maybe_unused]]
    auto ignored = ::write(m_kill_fd, "1", 1);
}

void JobCgroup::remove() {
  if (m_path.empty())
    return;
  for (int attempt = 0; rmdir(m_path.c_str()) != 0; ++attempt) {
    if (errno != EBUSY || attempt == 100) {
      spdlog::debug("cannot remove the job's cgroup {}: {}", m_path, strerror(errno));
      break;
    }
    if (attempt == 0)
      kill();  // nothing of the job may outlive it
    pause_10ms();
  }
  m_path.clear();
}

void kill_and_remove_cgroup(int kill_fd, const char* path) {
  [[maybe_unused]] auto ignored = ::write(kill_fd, "1", 1);
  for (int attempt = 0; attempt < 500 && rmdir(path) != 0 && errno == EBUSY; ++attempt)
    pause_10ms();
}

}  // namespace clk::run
