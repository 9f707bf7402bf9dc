// clock init's account of a migration: created, applied (by version, not by
// count: a schema may hold 003 and lack 002), or current.
#include <doctest/doctest.h>

#include "store/migration_report.hpp"

using clk::store::Migration;
using clk::store::migration_report;

namespace {

const std::vector<Migration> k_known = {
    {1, "001_initial", ""}, {2, "002_queue", ""}, {3, "003_history", ""}};

}  // namespace

TEST_CASE("a schema that did not exist is created, up to the newest migration") {
  auto report = migration_report(std::nullopt, {1, 2, 3}, k_known);
  CHECK(report.created);
  CHECK(report.applied == std::vector<std::string>{"001_initial", "002_queue", "003_history"});
  CHECK(report.latest == "003_history");
}

TEST_CASE("the migrations applied are those missing before, even one below the newest") {
  auto report = migration_report(std::set<int>{1, 3}, {1, 2, 3}, k_known);
  CHECK_FALSE(report.created);
  CHECK(report.applied == std::vector<std::string>{"002_queue"});
  CHECK(report.latest == "003_history");
}

TEST_CASE("a current schema applies nothing and names its newest migration") {
  auto report = migration_report(std::set<int>{1, 2, 3}, {1, 2, 3}, k_known);
  CHECK_FALSE(report.created);
  CHECK(report.applied.empty());
  CHECK(report.latest == "003_history");
}
