// Reading the kernel's small text files (/proc, /sys/fs/cgroup) whole.
#pragma once

#include <optional>
#include <string>

namespace clk::util {

// The whole of a small kernel text file, read with read(2); none when it
// cannot be opened. A /proc file of a process that ends between the open and
// the read reads short (ESRCH ends the loop): a process gone, not an error.
std::optional<std::string> read_proc_file(const std::string& path);

}  // namespace clk::util
