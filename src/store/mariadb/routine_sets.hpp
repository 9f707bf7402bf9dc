// The sets of routines that older releases installed beside this one's
// (routine_sets, migration 008; docs/upgrades.md): which of them no release
// that may still run needs, named by clock check and dropped by clock init.
#pragma once

#include <optional>
#include <string>

namespace clk::store::mariadb {

class Connection;

// Drops the procedures and functions of every set recorded for a release
// older than the previous one (this release's minor less one; every release
// of an older major is older), then its row. Release 1.0's routines, which
// carry no suffix, are never dropped here. Run by clock init only, under the
// migration lock.
void retire_sets(Connection& connection);

// One line for clock check and clock init when such sets are still there,
// naming them; nothing otherwise, and nothing when this login may not read
// routine_sets (advice, never an error).
std::optional<std::string> retired_sets_warning(Connection& connection);

}  // namespace clk::store::mariadb
