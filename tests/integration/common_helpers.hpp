// Small helpers that many test files share: text, the environment, /proc,
// file modes and skip conditions. Declared once here so that the suites
// compile in unity batches (CMakeLists.txt), where every file of a batch
// sees every other's names.
#pragma once

#include <filesystem>
#include <string>
#include <sys/types.h>

#include <doctest/doctest.h>

namespace clk::test {

bool contains(const std::string& text, const std::string& part);
std::string first_line(const std::string& text);

// The variable's value, or `fallback` when it is unset or empty.
std::string getenv_or(const char* name, const std::string& fallback);
// Whether CI is set (and not "0" or "false"): where a missing server fails a test.
bool running_in_ci();
// promtool, from CLOCK_TEST_PROMTOOL, else Debian's.
std::string promtool();

// The NUL-separated command line of a process; empty when it is gone.
std::string proc_cmdline(pid_t pid);
// A file's permission bits (REQUIREs that it exists).
unsigned mode_of(const std::filesystem::path& file);

// Skip conditions: tests that switch users need root; some need SQLite too.
doctest::skip as_root();
doctest::skip sqlite_as_root();

}  // namespace clk::test
