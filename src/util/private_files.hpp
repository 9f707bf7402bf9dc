// Where clock finds its private files (the PostgreSQL module): next to the binary (a build tree),
// in the private folder relative to it (an install unpacked elsewhere, as `dpkg -x` does), then
// where it was installed.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace clk::util {

// The places to look for `name`, in that order.
std::vector<std::filesystem::path> private_file_candidates(const std::string& name);

// The first of those places where `name` exists; none, with `tried` naming
// every place looked at ("a, b, c"), for the "not installed" message.
struct FoundFile {
  std::optional<std::filesystem::path> path;
  std::string tried;
};
FoundFile find_private_file(const std::string& name);

}  // namespace clk::util
