// Process group membership from /proc/PID/stat.
#include "util/process_group.hpp"

#include <charconv>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <memory>
#include <optional>
#include <string>
#include <unistd.h>

namespace clk::util {

namespace {

struct StatFacts {
  char state;
  pid_t group;
};

// State and process group from /proc/PID/stat. The command name, in
// parentheses, may hold spaces and ')', so the fields after it are found from
// the last ')'. Read with read(2), not a stream: a process that ends between
// the open and the read fails the read with ESRCH, which libstdc++'s filebuf
// throws as an exception (clock run then exited 70 while it waited for a
// command's group to end); here it is a process gone.
std::optional<StatFacts> read_stat(const char* pid) {
  const std::string path = std::string("/proc/") + pid + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return std::nullopt;
  char text[1024];
  const ssize_t length = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (length <= 0)
    return std::nullopt;
  text[length] = '\0';
  const char* paren = std::strrchr(text, ')');
  if (paren == nullptr)
    return std::nullopt;
  // ") S PPID PGRP ..."
  char state = 0;
  long parent = 0, group = 0;
  if (std::sscanf(paren + 1, " %c %ld %ld", &state, &parent, &group) != 3)
    return std::nullopt;
  return StatFacts{state, static_cast<pid_t>(group)};
}

std::optional<pid_t> as_pid(const char* name) {
  pid_t pid = 0;
  const char* end = name + std::char_traits<char>::length(name);
  auto [ptr, ec] = std::from_chars(name, end, pid);
  if (ec != std::errc() || ptr != end || pid <= 0)
    return std::nullopt;
  return pid;
}

bool has_exited(char state) {
  return state == 'Z' || state == 'X' || state == 'x';
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
    auto facts = read_stat(entry->d_name);
    if (facts && facts->group == group && !has_exited(facts->state))
      return true;
  }
  return false;
}

}  // namespace clk::util
