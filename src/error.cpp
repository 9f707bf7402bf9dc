// Names of exit codes, for logs and machine-readable output.
#include "error.hpp"

namespace clk {

std::string_view code_name(ExitCode code) {
  switch (code) {
    case ExitCode::ok:
      return "ok";
    case ExitCode::usage:
      return "usage";
    case ExitCode::unavailable:
      return "unavailable";
    case ExitCode::internal:
      return "internal";
    case ExitCode::local_database:
      return "local_database";
    case ExitCode::not_acquired:
      return "not_acquired";
    case ExitCode::deadlock:
      return "deadlock";
    case ExitCode::not_owner:
      return "not_owner";
    case ExitCode::config:
      return "config";
    case ExitCode::lease_lost:
      return "lease_lost";
    case ExitCode::out_of_time:
      return "out_of_time";
    case ExitCode::cannot_execute:
      return "cannot_execute";
    case ExitCode::not_found:
      return "not_found";
  }
  return "unknown";
}

}  // namespace clk
