// See privileges.hpp. information_schema.ROUTINES lists only the routines
// on which the login (with its active roles) holds a privilege; clock's
// roles (sql/mariadb/roles.sql) grant EXECUTE and nothing else on them, so
// a procedure missing from it is one this login may not call.
#include "store/mariadb/privileges.hpp"

#include <algorithm>

#include "store/mariadb/connection.hpp"
#include "store/mariadb/schema.hpp"

namespace clk::store::mariadb {

namespace {

// The procedures clock run calls (roles.sql grants them to clock_app).
constexpr const char* k_run_procedures[] = {
    "clock_try_acquire", "clock_renew",       "clock_note_leftovers",
    "clock_release",     "clock_leave_queue", "clock_record_missed_run",
};

constexpr const char* k_visible =
    "SELECT ROUTINE_NAME FROM information_schema.ROUTINES"
    " WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_TYPE = 'PROCEDURE'"
    " AND ROUTINE_NAME LIKE 'clock\\_%'";

}  // namespace

std::vector<std::string> missing_run_privileges(Connection& connection) {
  std::vector<std::string> visible;
  for (const auto& row : connection.call("the privilege check", k_visible, {})) {
    if (!row.empty() && row.front())
      visible.push_back(*row.front());
  }
  std::vector<std::string> lines;
  for (const char* name : k_run_procedures) {
    const std::string routine = std::string(name) + set_suffix();
    if (std::find(visible.begin(), visible.end(), routine) != visible.end())
      continue;
    lines.push_back("this login (CURRENT_USER(), with its default role) may not execute " +
                    routine +
                    ", which clock run needs: grant it clock_app (GRANT clock_app TO <login>; "
                    "SET DEFAULT ROLE clock_app FOR <login>, after running "
                    "sql/mariadb/roles.sql in the clock database as root, a login that may "
                    "create roles)");
  }
  return lines;
}

}  // namespace clk::store::mariadb
