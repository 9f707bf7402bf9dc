// The one error type of clock, and the table from its codes to exit statuses
// (man clock, EXIT STATUS). Errors are thrown where they are understood and caught once, in
// cmd/main.cpp.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace clk {

enum class ExitCode : int {
  ok = 0,
  usage = 64,            // bad flag, resource name, duration or owner id
  unavailable = 69,      // backend unreachable, or retries exhausted
  internal = 70,         // a bug
  local_database = 74,   // SQLite file unusable
  not_acquired = 75,     // held by another with -n, or the wait timed out
  deadlock = 76,         // waiting would close a cycle
  not_owner = 77,        // release/renew of a lock this owner does not hold
  config = 78,           // unreadable or invalid config, bad database URL
  lease_lost = 79,       // clock run: lease lost, child stopped
  out_of_time = 124,     // clock run: --max-runtime ran out, child stopped
  cannot_execute = 126,  // clock run: command found but not executable
  not_found = 127,       // clock run: command not found
};

// The process exit status for a code.
constexpr int exit_status(ExitCode code) {
  return static_cast<int>(code);
}

// A short name for a code, for logs and JSON ("usage", "not_acquired", …).
std::string_view code_name(ExitCode code);

class Error : public std::runtime_error {
 public:
  // `message` is one line that says what failed and what to do about it.
  Error(ExitCode code, std::string message)
      : std::runtime_error(std::move(message)), m_code(code) {}

  ExitCode code() const { return m_code; }

 private:
  ExitCode m_code;
};

}  // namespace clk
