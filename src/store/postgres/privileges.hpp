// Whether this login may do what `clock run` does (clock check): execute
// the schema's try_acquire, renew, release, leave_queue and record_missed_run.
#pragma once

#include <string>
#include <vector>

#include "store/postgres/connection.hpp"

namespace clk::store::postgres {

// One line per function of `schema` that `clock run` calls and this login may
// not execute (has_function_privilege), naming the fix; a function missing
// from the schema counts as missing. Throws like Connection::call.
std::vector<std::string> missing_run_privileges(Connection& conn, const std::string& schema);

}  // namespace clk::store::postgres
