// /proc/PID/stat, read with read(2) (util/proc_file.hpp): a process that
// ends between the open and the read is a process gone, not an exception.
#include "util/proc_stat.hpp"

#include <cstdio>

#include "util/proc_file.hpp"

namespace clk::util {

std::optional<ProcStat> read_proc_stat(const std::string& pid) {
  auto text = read_proc_file("/proc/" + pid + "/stat");
  if (!text)
    return std::nullopt;
  auto paren = text->rfind(')');
  if (paren == std::string::npos)
    return std::nullopt;
  // ") S PPID PGRP SESSION TTY TPGID FLAGS MINFLT CMINFLT MAJFLT CMAJFLT UTIME
  // STIME CUTIME CSTIME PRIORITY NICE THREADS ITREALVALUE STARTTIME ..."
  char state = 0;
  long parent = 0, group = 0;
  long long ticks = 0;
  if (std::sscanf(
          text->c_str() + paren + 1,
          " %c %ld %ld %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %lld",
          &state, &parent, &group, &ticks) != 4 ||
      ticks < 0)
    return std::nullopt;
  return ProcStat{state, static_cast<pid_t>(parent), static_cast<pid_t>(group), ticks};
}

bool has_exited(char state) {
  return state == 'Z' || state == 'X' || state == 'x';
}

}  // namespace clk::util
