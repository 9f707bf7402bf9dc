// The places of clock's private files, from the running binary's folder.
#include "util/private_files.hpp"

#include <array>
#include <unistd.h>

namespace clk::util {

namespace fs = std::filesystem;

namespace {

fs::path executable_folder() {
  std::array<char, 4096> path{};
  auto length = readlink("/proc/self/exe", path.data(), path.size() - 1);
  if (length <= 0)
    return {};
  return fs::path(std::string(path.data(), static_cast<std::size_t>(length))).parent_path();
}

}  // namespace

std::vector<fs::path> private_file_candidates(const std::string& name) {
  auto folder = executable_folder();
  return {folder / name, folder.parent_path() / CLOCK_PRIVATE_SUBDIR / name,
          fs::path(CLOCK_PRIVATE_DIR) / name};
}

FoundFile find_private_file(const std::string& name) {
  FoundFile found;
  for (const auto& candidate : private_file_candidates(name)) {
    std::error_code error;
    if (fs::exists(candidate, error)) {
      found.path = candidate;
      return found;
    }
    found.tried += (found.tried.empty() ? "" : ", ") + candidate.string();
  }
  return found;
}

}  // namespace clk::util
