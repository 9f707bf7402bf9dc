// The job's processes, found through /proc from clock down: each process's
// children (/proc/PID/task/TID/children), or, on a kernel without that file,
// the parent pid of every process (/proc/PID/stat).
#include "run/job_tree.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <memory>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/job_cgroup.hpp"
#include "util/proc_file.hpp"
#include "util/proc_stat.hpp"

namespace clk::run {

namespace {

std::optional<pid_t> as_pid(std::string_view text) {
  pid_t pid = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), pid);
  if (ec != std::errc() || ptr != text.data() + text.size() || pid <= 0)
    return std::nullopt;
  return pid;
}

// The numeric entries of a /proc directory.
template <typename Each>
void for_each_pid_entry(const std::string& dir, Each each) {
  std::unique_ptr<DIR, int (*)(DIR*)> listing(opendir(dir.c_str()), closedir);
  if (!listing)
    return;
  while (const dirent* entry = readdir(listing.get())) {
    if (auto pid = as_pid(entry->d_name))
      each(*pid);
  }
}

std::optional<pid_t> parent_of(pid_t pid) {
  auto facts = util::read_proc_stat(std::to_string(pid));
  if (!facts)
    return std::nullopt;
  return facts->parent;
}

// Whether /proc/self is this process: not so in a pid namespace that kept
// the parent namespace's /proc, where its pids are not ours to kill.
bool proc_shows_own_namespace() {
  char link[32] = {};
  ssize_t n = readlink("/proc/self", link, sizeof link - 1);
  return n > 0 && as_pid(std::string_view(link, static_cast<std::size_t>(n))) == getpid();
}

}  // namespace

bool become_subreaper() {
  return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
}

JobTree::JobTree(pid_t guard, const JobCgroup* cgroup)
    : m_self(getpid()),
      m_guard(guard),
      m_cgroup(cgroup),
      m_visible(proc_shows_own_namespace()),
      m_children_file(m_visible &&
                      access(("/proc/self/task/" + std::to_string(gettid()) + "/children").c_str(),
                             R_OK) == 0) {}

std::vector<pid_t> JobTree::children_of(pid_t pid) const {
  std::vector<pid_t> children;
  if (m_children_file) {
    // Each thread has its own list: a child belongs to the thread that forked
    // it (an orphan, to the thread the kernel picked as its reaper).
    std::string tasks = "/proc/" + std::to_string(pid) + "/task";
    for_each_pid_entry(tasks, [&](pid_t tid) {
      auto text = util::read_proc_file(tasks + "/" + std::to_string(tid) + "/children");
      if (!text)
        return;
      std::string_view rest(*text);
      while (!rest.empty()) {
        auto space = rest.find(' ');
        if (auto child = as_pid(rest.substr(0, space)))
          children.push_back(*child);
        rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
      }
    });
    return children;
  }
  for_each_pid_entry("/proc", [&](pid_t other) {
    if (parent_of(other) == pid)
      children.push_back(other);
  });
  return children;
}

std::optional<std::vector<pid_t>> JobTree::reap_orphans(pid_t command) const {
  if (!m_visible)
    return std::nullopt;
  auto left = children_of(m_self);
  std::erase_if(left, [&](pid_t child) {
    return child == m_guard || child == command || waitpid(child, nullptr, WNOHANG) == child;
  });
  return left;
}

std::optional<std::vector<pid_t>> JobTree::members() const {
  if (!m_visible)
    return std::nullopt;
  auto found = children_of(m_self);
  std::erase(found, m_guard);
  return with_descendants(std::move(found));
}

std::vector<pid_t> JobTree::with_descendants(std::vector<pid_t> roots) const {
  // Breadth first: parents before their children.
  for (std::size_t next = 0; next < roots.size(); ++next) {
    for (pid_t child : children_of(roots[next]))
      roots.push_back(child);
  }
  return roots;
}

void JobTree::signal_all(int signo, pid_t skip_group) const {
  if (signo == SIGKILL && m_cgroup)
    m_cgroup->kill();
  if (auto pids = members()) {
    for (pid_t pid : *pids) {
      if (skip_group == 0 || getpgid(pid) != skip_group)
        kill(pid, signo);
    }
  }
}

std::string JobTree::command_of(pid_t pid) {
  constexpr std::size_t k_longest = 200;
  const std::string dir = "/proc/" + std::to_string(pid);
  auto args = util::read_proc_file(dir + "/cmdline").value_or("");
  while (!args.empty() && args.back() == '\0')
    args.pop_back();
  if (!args.empty()) {
    std::replace(args.begin(), args.end(), '\0', ' ');
    if (args.size() > k_longest)
      args = args.substr(0, k_longest) + "…";
    return args;
  }
  auto name = util::read_proc_file(dir + "/comm").value_or("");
  if (!name.empty() && name.back() == '\n')
    name.pop_back();
  return name.empty() ? "?" : "[" + name + "]";
}

std::string JobTree::describe(const std::vector<pid_t>& pids, std::size_t limit) {
  std::string text;
  for (std::size_t i = 0; i < pids.size() && i < limit; ++i) {
    auto name = util::read_proc_file("/proc/" + std::to_string(pids[i]) + "/comm").value_or("?\n");
    if (!name.empty() && name.back() == '\n')
      name.pop_back();
    text += (text.empty() ? "" : ", ") + std::to_string(pids[i]) + " (" + name + ")";
  }
  if (pids.size() > limit)
    text += ", …";
  return text;
}

}  // namespace clk::run
