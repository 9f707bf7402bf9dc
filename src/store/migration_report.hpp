// clock init's account of a migration: which of the migrations this binary
// knows a schema recorded before and after, turned into what was created or
// applied. Versions, not a count: numbers are given to branches ahead of
// merging, so a schema may hold 003 and lack 002.
#pragma once

#include <optional>
#include <set>
#include <vector>

#include "store/migration.hpp"
#include "store/store.hpp"

namespace clk::store {

// `before` is nullopt when there was no clock schema.
MigrationReport migration_report(const std::optional<std::set<int>>& before,
                                 const std::set<int>& after, const std::vector<Migration>& known);

}  // namespace clk::store
