// The privilege check of clock check: what clock run needs, asked of the
// server's catalog rather than tried, so that checking leaves no lease and no
// history behind.
#include "store/postgres/privileges.hpp"

#include "store/postgres/schema.hpp"

namespace clk::store::postgres {

namespace {

// The functions clock run calls (sql/postgres/roles.sql grants them to
// clock_app), and which of them this login may not execute: a
// comma-separated list, "" when none is missing. pg_proc is readable by
// every role; a function the schema lacks is listed too.
constexpr const char* k_missing =
    "SELECT coalesce(string_agg(f.name, ',' ORDER BY f.name), '')"
    " FROM unnest(ARRAY['try_acquire','renew','note_leftovers','release2','leave_queue',"
    "'record_missed_run'])"
    " AS f(name)"
    " WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_proc p"
    "   JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace"
    "   WHERE n.nspname = $1 AND p.proname = f.name"
    "     AND pg_catalog.has_function_privilege(p.oid, 'EXECUTE'))";

}  // namespace

std::vector<std::string> missing_run_privileges(Connection& conn, const std::string& schema) {
  std::string missing = conn.call("the privilege check", k_missing, {schema}, Retry::if_broken);
  std::vector<std::string> lines;
  std::size_t begin = 0;
  while (begin < missing.size()) {
    std::size_t end = missing.find(',', begin);
    if (end == std::string::npos)
      end = missing.size();
    std::string name = missing.substr(begin, end - begin);
    lines.push_back("this login (current_user) may not execute " + quoted(schema) + "." + name +
                    "(), which clock run needs: grant it clock_app (GRANT clock_app TO "
                    "<login>, after running sql/postgres/roles.sql as the schema's owner)");
    begin = end + 1;
  }
  return lines;
}

}  // namespace clk::store::postgres
