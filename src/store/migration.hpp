// A schema migration embedded from sql/<backend>/migrations/NNN_name.sql at
// build time, or a file of sql/postgres/functions/ or sql/mariadb/procedures/
// (NN_concern.sql).
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
std::string_view postgres_migrations_sha256();  // of sql/postgres/migrations' texts
// sql/mariadb/migrations, embedded in the MariaDB module only.
const std::vector<store::Migration>& mariadb_migrations();
// The files of sql/mariadb/procedures/ and the sha256 (hex) of their texts,
// in the MariaDB module only.
const std::vector<store::Migration>& mariadb_procedures();
std::string_view mariadb_procedures_sha256();
// Release 1.0's sql/mariadb/procedures, frozen in sql/mariadb/release-1.0.
const std::vector<store::Migration>& mariadb_release_1_0_procedures();
std::string_view mariadb_release_1_0_procedures_sha256();
// The files of sql/postgres/functions/ and the sha256 (hex) of their texts.
const std::vector<store::Migration>& postgres_functions();
std::string_view postgres_functions_sha256();
// Release 1.0's sql/postgres/functions, frozen in sql/postgres/release-1.0.
const std::vector<store::Migration>& postgres_release_1_0_functions();
std::string_view postgres_release_1_0_functions_sha256();
}  // namespace clk::sql
