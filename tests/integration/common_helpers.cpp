// See common_helpers.hpp.
#include "common_helpers.hpp"

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.hpp"

namespace clk::test {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

std::string getenv_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

bool running_in_ci() {
  const std::string value = getenv_or("CI", "");
  return !value.empty() && value != "0" && value != "false";
}

std::string promtool() {
  return getenv_or("CLOCK_TEST_PROMTOOL", "/usr/bin/promtool");
}

std::string proc_cmdline(pid_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

unsigned mode_of(const std::filesystem::path& file) {
  struct stat info {};
  REQUIRE(::stat(file.c_str(), &info) == 0);
  return info.st_mode & 07777;
}

doctest::skip as_root() {
  return doctest::skip(geteuid() != 0);
}

doctest::skip sqlite_as_root() {
  return doctest::skip(geteuid() != 0 || backend_name() != "sqlite");
}

}  // namespace clk::test
