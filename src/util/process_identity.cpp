// Boot id, pid namespace and process start times from /proc.
#include "util/process_identity.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

#include "util/proc_file.hpp"
#include "util/proc_stat.hpp"

namespace clk::util {

std::optional<std::string> boot_id() {
  auto text = read_proc_file("/proc/sys/kernel/random/boot_id");
  if (!text)
    return std::nullopt;
  while (!text->empty() && (text->back() == '\n' || text->back() == ' '))
    text->pop_back();
  if (text->size() != 36)
    return std::nullopt;
  return text;
}

std::optional<std::int64_t> pid_namespace() {
  // /proc/self names this process as the mounted /proc counts it: the same
  // number as getpid() only when that /proc is of this pid namespace.
  char link[32] = {};
  const ssize_t length = ::readlink("/proc/self", link, sizeof link - 1);
  if (length <= 0 || std::to_string(::getpid()) != std::string(link, static_cast<size_t>(length)))
    return std::nullopt;
  struct stat facts {};
  if (::stat("/proc/self/ns/pid", &facts) != 0)
    return std::nullopt;
  return static_cast<std::int64_t>(facts.st_ino);
}

std::optional<std::int64_t> process_start_ticks(pid_t pid) {
  auto facts = read_proc_stat(std::to_string(pid));
  if (!facts)
    return std::nullopt;
  return facts->start_ticks;
}

Presence process_presence(pid_t pid, std::int64_t start_ticks) {
  if (pid <= 0)
    return Presence::unknown;
  if (::kill(pid, 0) != 0 && errno == ESRCH)
    return Presence::gone;
  auto facts = read_proc_stat(std::to_string(pid));
  if (!facts)  // it exists for kill(), but its /proc entry is hidden or just went
    return ::kill(pid, 0) != 0 && errno == ESRCH ? Presence::gone : Presence::unknown;
  // Another process that reuses the pid, or the process itself exited and
  // waiting only to be reaped (a zombie runs nothing).
  if (facts->start_ticks != start_ticks || has_exited(facts->state))
    return Presence::gone;
  return Presence::running;
}

std::optional<bool> cgroup_has_processes(const std::string& path) {
  constexpr std::string_view k_root = "/sys/fs/cgroup/";
  if (!path.starts_with(k_root) || path.find("/..") != std::string::npos)
    return std::nullopt;
  struct stat facts {};
  if (::stat(path.c_str(), &facts) != 0)
    return errno == ENOENT ? std::optional(false) : std::nullopt;
  auto procs = read_proc_file(path + "/cgroup.procs");
  if (!procs)
    return ::stat(path.c_str(), &facts) != 0 && errno == ENOENT ? std::optional(false)
                                                                : std::nullopt;
  return procs->find_first_not_of(" \n") != std::string::npos;
}

}  // namespace clk::util
