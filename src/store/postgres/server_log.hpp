// Whether the server's statement log would keep owner secrets: the secret
// travels as a bind parameter of clock's functions (it proves the owner to
// the server, which keeps only its hash), and a server that logs statements
// with their parameters writes it to its log.
#pragma once

#include <optional>
#include <string>

#include "store/postgres/connection.hpp"

namespace clk::store::postgres {

// One line for an operator when this session's statements may be logged with
// their bind parameters (log_min_duration_statement, log_min_duration_sample
// or log_statement = all, with log_parameter_max_length not 0); nothing
// otherwise, and nothing when the question cannot be asked: advice, never an
// error.
std::optional<std::string> secrets_in_server_log_warning(Connection& conn);

}  // namespace clk::store::postgres
