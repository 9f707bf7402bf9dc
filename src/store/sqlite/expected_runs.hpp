// Missed runs on SQLite (man clock, COMMANDS): declaring a resource's expected period
// and reading the expected resources with their successes (tables of
// migration 008). The Store's expect_runs() and expected_runs() call these.
#pragma once

#include <cstdint>

#include "store/sqlite/db.hpp"
#include "store/store.hpp"

namespace clk::store::sqlite {

// Upserts each resource's period in one IMMEDIATE transaction at `now_ms`, if
// the expectation's owner holds a live lease on each, proven by its secret;
// else throws Error(not_owner) and writes nothing.
void expect_runs(Database& db, const Expectation& expectation, std::int64_t now_ms);

// Reads, in one read transaction, the expected resources and their successes
// at or after the query's since (or now) minus the period, and the latest before.
ExpectedRuns expected_runs(Database& db, const ExpectedQuery& query, std::int64_t now_ms);

}  // namespace clk::store::sqlite
