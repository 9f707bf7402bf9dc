// The sets of functions that older releases installed beside this one's
// (routine_sets, migration 019; docs/upgrades.md): which of them no release
// that may still run needs, named by clock check and retired by clock init.
#pragma once

#include <optional>
#include <string>

#include "store/postgres/connection.hpp"

namespace clk::store::postgres {

// One transaction, under the migration lock: drops every set recorded for a
// release older than the previous one (this release's minor less one; every
// release of an older major is older) and its row. Release 1.0's functions,
// which live in the schema itself, are the next release's to retire: this
// script never drops the schema. Run by clock init only.
std::string retire_script(const std::string& schema);

// One line for clock check and clock init when sets of releases older than
// the previous one are still there, naming them; nothing otherwise, and
// nothing when this login may not read routine_sets (advice, never an error).
std::optional<std::string> retired_sets_warning(Connection& conn, const std::string& schema);

}  // namespace clk::store::postgres
