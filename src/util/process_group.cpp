// Process group membership, from each process's /proc/PID/stat.
#include "util/process_group.hpp"

#include <charconv>
#include <dirent.h>
#include <memory>
#include <optional>
#include <string>
#include <unistd.h>

#include "util/proc_stat.hpp"

namespace clk::util {

namespace {

std::optional<pid_t> as_pid(const char* name) {
  pid_t pid = 0;
  const char* end = name + std::char_traits<char>::length(name);
  auto [ptr, ec] = std::from_chars(name, end, pid);
  if (ec != std::errc() || ptr != end || pid <= 0)
    return std::nullopt;
  return pid;
}

}  // namespace

std::optional<bool> process_group_has_members(pid_t group, pid_t except) {
  std::unique_ptr<DIR, int (*)(DIR*)> proc(opendir("/proc"), closedir);
  if (!proc)
    return std::nullopt;
  while (const dirent* entry = readdir(proc.get())) {
    auto pid = as_pid(entry->d_name);
    if (!pid || *pid == except)
      continue;
    auto facts = read_proc_stat(entry->d_name);
    if (facts && facts->group == group && !has_exited(facts->state))
      return true;
  }
  return false;
}

}  // namespace clk::util
