// See schema.hpp.
#include "store/mariadb/schema.hpp"

#include <algorithm>
#include <set>

#include "error.hpp"
#include "store/mariadb/connection.hpp"
#include "store/migration.hpp"

namespace clk::store::mariadb {

namespace {

constexpr const char* k_bookkeeping =
    "CREATE TABLE IF NOT EXISTS schema_migrations (\n"
    "  version    INT NOT NULL PRIMARY KEY,\n"
    "  name       VARCHAR(255) NOT NULL,\n"
    "  applied_at DATETIME(6) NOT NULL DEFAULT UTC_TIMESTAMP(6)\n"
    ") ENGINE=InnoDB";

constexpr const char* k_lock_name = "CONCAT('clock.migrate.', DATABASE())";
constexpr std::int64_t k_lock_wait_seconds = 30;

std::string record_sql(const Migration& migration) {
  // The name is a file name of ours ([0-9a-z_]), never user text.
  return "INSERT IGNORE INTO schema_migrations (version, name) VALUES (" +
         std::to_string(migration.version) + ", '" + std::string(migration.name) + "')";
}

// A migration refused for want of privileges: the configuration must change.
bool is_privilege_error(unsigned number) {
  switch (number) {
    case 1044:  // access denied to the database
    case 1142:  // command denied on a table
    case 1227:  // needs SUPER or another privilege
    case 1370:  // routine privilege denied
    case 1419:  // binary logging on: creating a function needs SUPER
      return true;
    default:
      return false;
  }
}

// Creates nothing that exists, so that a login without CREATE may run
// `clock init` on a schema that is current (MariaDB checks the privilege of
// CREATE TABLE IF NOT EXISTS even when the table exists).
void apply_missing(Connection& connection) {
  auto found = connection
                   .prepare("look for schema_migrations",
                            "SELECT COUNT(*) FROM information_schema.tables "
                            "WHERE table_schema = DATABASE() AND table_name = 'schema_migrations'")
                   .query({});
  if (found.empty() || found[0].at(0) == "0")
    connection.execute("create schema_migrations", k_bookkeeping);
  std::set<int> applied;
  for (const Row& row :
       connection.prepare("read schema_migrations", "SELECT version FROM schema_migrations")
           .query({})) {
    applied.insert(std::stoi(row.at(0).value_or("0")));
  }
  for (const Migration& migration : sql::mariadb_migrations()) {
    if (applied.count(migration.version))
      continue;
    const std::string what = "migration " + std::string(migration.name);
    connection.execute_script(what, std::string(migration.sql));
    connection.execute(what, record_sql(migration));
  }
}

}  // namespace

int latest_version() {
  int latest = 0;
  for (const Migration& migration : sql::mariadb_migrations())
    latest = std::max(latest, migration.version);
  return latest;
}

std::string print_sql() {
  std::string sql = "-- clock schema for MariaDB, version " + std::to_string(latest_version()) +
                    " (WORK IN PROGRESS: clock does not serve MariaDB yet).\n"
                    "-- Run in the database clock will use: mariadb DATABASE < this-file.\n"
                    "-- MariaDB commits DDL at once; every statement may be run again.\n\n" +
                    std::string(k_bookkeeping) + ";\n";
  for (const Migration& migration : sql::mariadb_migrations()) {
    sql += "\n-- " + std::string(migration.name) + ".sql\n" + std::string(migration.sql);
    if (!sql.ends_with('\n'))
      sql += '\n';
    sql += record_sql(migration) + ";\n";
  }
  return sql;
}

void migrate(Connection& connection) {
  auto rows = connection
                  .prepare("take the migration lock",
                           "SELECT GET_LOCK(" + std::string(k_lock_name) + ", ?)")
                  .query({k_lock_wait_seconds});
  if (rows.empty() || rows[0].at(0) != "1") {
    throw Error(ExitCode::unavailable,
                "MariaDB: another clock init has been migrating this database for " +
                    std::to_string(k_lock_wait_seconds) + " s; try again when it is done");
  }
  try {
    apply_missing(connection);
  } catch (const ServerTrouble& trouble) {
    connection.close();  // ends the session, and so its GET_LOCK
    if (is_privilege_error(trouble.number())) {
      throw Error(ExitCode::config,
                  std::string(trouble.what()) +
                      "; run clock init as a login that may create tables and functions in "
                      "this database, or give a DBA the output of clock init --print-sql");
    }
    throw;
  } catch (...) {
    connection.close();
    throw;
  }
  connection.execute("release the migration lock",
                     "DO RELEASE_LOCK(" + std::string(k_lock_name) + ")");
}

}  // namespace clk::store::mariadb
