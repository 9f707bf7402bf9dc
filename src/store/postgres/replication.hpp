// What the server's replication means for clock's guarantees: a grant must
// reach a standby before it is reported, or a failover can hand it out again.
#pragma once

#include <optional>
#include <string>

#include "store/postgres/connection.hpp"

namespace clk::store::postgres {

// One line for an operator when the server streams to asynchronous standbys
// and to no synchronous one (pg_stat_replication); nothing otherwise, and
// nothing when the role may not see the standbys' sync state (it needs
// pg_monitor) or the question cannot be asked: the check is advice, never an
// error.
std::optional<std::string> asynchronous_standby_warning(Connection& conn);

}  // namespace clk::store::postgres
