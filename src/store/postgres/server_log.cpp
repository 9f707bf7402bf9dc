// The statement-log check of clock init and clock status -v.
#include "store/postgres/server_log.hpp"

#include <exception>

namespace clk::store::postgres {

namespace {

// "t" when a statement of this session may be logged with its parameters.
// The settings are the session's: ALTER DATABASE … SET and ALTER ROLE … SET
// apply to it, so the fix the warning names is seen here.
constexpr const char* k_logs_parameters =
    "SELECT (current_setting('log_min_duration_statement') <> '-1'"
    "        OR current_setting('log_min_duration_sample') <> '-1'"
    "        OR current_setting('log_statement') = 'all')"
    "   AND current_setting('log_parameter_max_length') <> '0'";

}  // namespace

std::optional<std::string> secrets_in_server_log_warning(Connection& conn) {
  std::string logs;
  try {
    logs = conn.call("the statement-log check", k_logs_parameters, {}, Retry::if_broken);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (logs != "t")
    return std::nullopt;
  return "this PostgreSQL server logs statements with their parameters "
         "(log_min_duration_statement, log_min_duration_sample or log_statement = all), so owner "
         "secrets reach its log, where a log reader could act as those owners; as a superuser "
         "run ALTER DATABASE <this database> SET log_parameter_max_length = 0 (statements are "
         "still logged, without their values), see 'Threat model' in man clock";
}

}  // namespace clk::store::postgres
