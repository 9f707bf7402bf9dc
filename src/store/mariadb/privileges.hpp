// The privilege check of clock check on MariaDB, as store/postgres/
// privileges.hpp: what clock run needs, asked of the server's catalog
// rather than tried, so that checking leaves no lease and no history.
#pragma once

#include <string>
#include <vector>

namespace clk::store::mariadb {

class Connection;

// One line per procedure clock run calls that this login may not execute,
// naming the fix; empty when none is missing.
std::vector<std::string> missing_run_privileges(Connection& connection);

}  // namespace clk::store::mariadb
