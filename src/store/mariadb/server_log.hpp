// Whether the MariaDB server's statement logs would keep owner secrets, as
// src/store/postgres/server_log.hpp asks of PostgreSQL: the secret travels
// as a parameter of clock's procedures, and the general log (every
// statement) and the slow log (every slow one) write statements with their
// values.
#pragma once

#include <optional>
#include <string>

#include "store/mariadb/connection.hpp"

namespace clk::store::mariadb {

// One line for an operator when this session's statements reach the general
// log or the slow log; nothing otherwise, and nothing when the question
// cannot be asked: advice, never an error.
std::optional<std::string> secrets_in_server_log_warning(Connection& connection);

}  // namespace clk::store::mariadb
