// A schema migration embedded from sql/<backend>/NNN_name.sql at build time.
#pragma once

#include <string_view>
#include <vector>

namespace clk::store {

struct Migration {
  int version;            // NNN, applied in increasing order
  std::string_view name;  // the file name without .sql
  std::string_view sql;
};

}  // namespace clk::store

namespace clk::sql {
// Defined in generated sources (cmake/EmbedSql.cmake).
const std::vector<store::Migration>& sqlite_migrations();
const std::vector<store::Migration>& postgres_migrations();
}  // namespace clk::sql
