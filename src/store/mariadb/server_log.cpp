// The statement-log check of clock init, clock check and clock status -v.
#include "store/mariadb/server_log.hpp"

#include <exception>

namespace clk::store::mariadb {

std::optional<std::string> secrets_in_server_log_warning(Connection& connection) {
  std::vector<Row> rows;
  try {
    // sql_log_off keeps this session out of the general log (not the slow one).
    rows = connection
               .prepare("the statement-log check",
                        "SELECT @@GLOBAL.general_log AND NOT @@SESSION.sql_log_off, "
                        "@@GLOBAL.slow_query_log")
               .query({});
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (rows.empty() || rows[0].size() < 2)
    return std::nullopt;
  const bool general = rows[0][0] == "1";
  const bool slow = rows[0][1] == "1";
  if (!general && !slow)
    return std::nullopt;
  return std::string("this MariaDB server writes statements with their values to its ") +
         (general ? (slow ? "general and slow logs" : "general log") : "slow log") +
         ", so owner secrets reach " + (general && slow ? "them" : "it") +
         ", where a log reader could act as those owners; as an administrator run " +
         (general ? "SET GLOBAL general_log = 0" : "") + (general && slow ? " and " : "") +
         (slow ? "SET GLOBAL slow_query_log = 0" : "") +
         " (and in the server's option file), or keep the log as private as the secrets, see "
         "'Threat model' in man clock";
}

}  // namespace clk::store::mariadb
