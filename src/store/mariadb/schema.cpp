// See schema.hpp.
#include "store/mariadb/schema.hpp"

#include <algorithm>
#include <optional>
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

// The one row of procedures_stamp (migration 003).
constexpr const char* k_record_stamp =
    "INSERT INTO procedures_stamp (id, sha256) VALUES (1, ?) "
    "ON DUPLICATE KEY UPDATE sha256 = VALUES(sha256), applied_at = UTC_TIMESTAMP(6)";

// Ends each procedure file in --print-sql: a delimiter that no file holds, so
// the mariadb client sends a file whole, as clock init does.
constexpr const char* k_print_delimiter = "$$";

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

// The stamp the database records for its procedures; nullopt if none.
std::optional<std::string> recorded_stamp(Connection& connection) {
  auto rows =
      connection
          .prepare("read procedures_stamp", "SELECT sha256 FROM procedures_stamp WHERE id = 1")
          .query({});
  if (rows.empty())
    return std::nullopt;
  return rows[0].at(0);
}

// Applies every procedure file again when the recorded stamp is not this
// binary's, then records it. Under the migration lock, so two inits never
// apply at once and the second sees the first's stamp.
void apply_procedures(Connection& connection) {
  const std::string stamp(sql::mariadb_procedures_sha256());
  if (recorded_stamp(connection) == stamp)
    return;
  for (const Migration& file : sql::mariadb_procedures())
    connection.execute_script("procedures " + std::string(file.name), std::string(file.sql));
  connection.prepare("record procedures_stamp", k_record_stamp).execute({stamp});
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
                    ".\n"
                    "-- Run in the database clock will use: mariadb DATABASE < this-file.\n"
                    "-- MariaDB commits DDL at once; every statement may be run again.\n\n" +
                    std::string(k_bookkeeping) + ";\n";
  for (const Migration& migration : sql::mariadb_migrations()) {
    sql += "\n-- " + std::string(migration.name) + ".sql\n" + std::string(migration.sql);
    if (!sql.ends_with('\n'))
      sql += '\n';
    sql += record_sql(migration) + ";\n";
  }
  // The procedures, each file one statement for the client (DELIMITER), then
  // the stamp that tells clock init they are current.
  const std::string delimiter = k_print_delimiter;
  sql +=
      "\n-- sql/mariadb/procedures: every file again (CREATE OR REPLACE), then their stamp.\n"
      "DELIMITER " +
      delimiter + "\n";
  for (const Migration& file : sql::mariadb_procedures()) {
    sql += "\n-- " + std::string(file.name) + ".sql\n" + std::string(file.sql);
    if (!sql.ends_with('\n'))
      sql += '\n';
    sql += delimiter + "\n";
  }
  sql +=
      "DELIMITER ;\n"
      "INSERT INTO procedures_stamp (id, sha256) VALUES (1, '" +
      std::string(sql::mariadb_procedures_sha256()) +
      "')\n  ON DUPLICATE KEY UPDATE sha256 = VALUES(sha256), applied_at = UTC_TIMESTAMP(6);\n";
  return sql;
}

FirstLook first_look(Connection& connection) {
  // Every version this binary knows, not max(version): numbers are assigned
  // to branches ahead of merging, so a schema may hold 003 and lack 002.
  std::string versions;
  for (const Migration& migration : sql::mariadb_migrations())
    versions += (versions.empty() ? "" : ",") + std::to_string(migration.version);
  try {
    auto rows = connection
                    .prepare("check the schema version",
                             "SELECT (SELECT COUNT(*) FROM schema_migrations WHERE version IN (" +
                                 versions +
                                 ")) = ? AND (SELECT sha256 FROM procedures_stamp WHERE id = 1) "
                                 "<=> ? /*M!100400 , @@wsrep_on */")
                    .query({static_cast<std::int64_t>(sql::mariadb_migrations().size()),
                            std::string(sql::mariadb_procedures_sha256())});
    FirstLook look;
    look.current = !rows.empty() && rows[0].at(0) == "1";
    look.galera = !rows.empty() && rows[0].size() > 1 && rows[0][1] == "1";
    return look;
  } catch (const ServerTrouble& trouble) {
    if (trouble.number() != 1146)  // no such table: no clock schema yet
      throw;
  }
  auto rows =
      connection.prepare("ask whether this is a Galera node", "SELECT 0 /*M!100400 , @@wsrep_on */")
          .query({});
  return FirstLook{false, !rows.empty() && rows[0].size() > 1 && rows[0][1] == "1"};
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
    apply_procedures(connection);
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
