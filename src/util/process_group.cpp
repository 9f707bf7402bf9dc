// Process group membership from /proc/PID/stat.
#include "util/process_group.hpp"

#include <charconv>
#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>

namespace clk::util {

namespace {

struct StatFacts {
  char state;
  pid_t group;
};

// State and process group from /proc/PID/stat. The command name, in
// parentheses, may hold spaces and ')', so the fields after it are found from
// the last ')'.
std::optional<StatFacts> read_stat(const char* pid) {
  std::ifstream file(std::string("/proc/") + pid + "/stat");
  if (!file)
    return std::nullopt;
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  auto paren = text.rfind(')');
  if (paren == std::string::npos)
    return std::nullopt;
  // ") S PPID PGRP ..."
  char state = 0;
  long parent = 0, group = 0;
  if (std::sscanf(text.c_str() + paren + 1, " %c %ld %ld", &state, &parent, &group) != 3)
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
