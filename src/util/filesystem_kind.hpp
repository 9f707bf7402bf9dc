// Which file systems are network ones, by statfs(2) magic number: SQLite's
// POSIX locks are not reliable there (the SQLite store refuses them).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace clk::util {

// The name of the network file system with this statfs f_type ("NFS",
// "CIFS"…), or nothing for a local one.
std::optional<std::string> network_filesystem_name(std::int64_t f_type);

// The network file system that holds `path`, or nothing when it is local or
// statfs fails (whoever opens the path then reports the real problem).
std::optional<std::string> network_filesystem_of(const std::filesystem::path& path);

}  // namespace clk::util
