// See schema.hpp.
#include "store/mariadb/schema.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "error.hpp"
#include "store/mariadb/connection.hpp"
#include "store/mariadb/routine_sets.hpp"
#include "store/migration.hpp"
#include "store/migration_report.hpp"

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
MigrationReport apply_missing(Connection& connection) {
  auto found = connection
                   .prepare("look for schema_migrations",
                            "SELECT COUNT(*) FROM information_schema.tables "
                            "WHERE table_schema = DATABASE() AND table_name = 'schema_migrations'")
                   .query({});
  const bool created = found.empty() || found[0].at(0) == "0";
  if (created)
    connection.execute("create schema_migrations", k_bookkeeping);
  std::set<int> applied;
  for (const Row& row :
       connection.prepare("read schema_migrations", "SELECT version FROM schema_migrations")
           .query({})) {
    applied.insert(std::stoi(row.at(0).value_or("0")));
  }
  const std::set<int> before = applied;
  for (const Migration& migration : sql::mariadb_migrations()) {
    if (applied.count(migration.version))
      continue;
    const std::string what = "migration " + std::string(migration.name);
    connection.execute_script(what, std::string(migration.sql));
    connection.execute(what, record_sql(migration));
    applied.insert(migration.version);
  }
  return migration_report(created ? std::nullopt : std::optional(before), applied,
                          sql::mariadb_migrations());
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

// Release 1.0's routines (sql/mariadb/release-1.0, frozen), which v1.0.0
// hosts call: applied again when procedures_stamp does not hold their hash,
// then recorded, as v1.0.0 does, so that a v1.0.0 host finds its database
// current and never re-applies them. Under the migration lock, so two inits
// never apply at once and the second sees the first's stamp.
void apply_release_1_0(Connection& connection) {
  const std::string stamp(sql::mariadb_release_1_0_procedures_sha256());
  if (recorded_stamp(connection) == stamp)
    return;
  for (const Migration& file : sql::mariadb_release_1_0_procedures())
    connection.execute_script("release 1.0 procedures " + std::string(file.name),
                              std::string(file.sql));
  connection.prepare("record procedures_stamp", k_record_stamp).execute({stamp});
}

bool is_identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// The routines that the files define (CREATE OR REPLACE FUNCTION|PROCEDURE
// NAME), in file order.
std::vector<std::string> defined_routines() {
  std::vector<std::string> names;
  for (const Migration& file : sql::mariadb_procedures()) {
    std::string_view text = file.sql;
    for (std::string_view create :
         {"CREATE OR REPLACE FUNCTION ", "CREATE OR REPLACE PROCEDURE "}) {
      for (auto at = text.find(create); at != std::string_view::npos;
           at = text.find(create, at + 1)) {
        auto begin = at + create.size();
        auto end = begin;
        while (end < text.size() && is_identifier_char(text[end]))
          ++end;
        std::string name(text.substr(begin, end - begin));
        if (std::find(names.begin(), names.end(), name) == names.end())
          names.push_back(std::move(name));
      }
    }
  }
  return names;
}

// A file as installed in this release's set: every NAME( of a routine the
// files define gets the set's suffix; tables, and routines the migrations
// define (clock_now_us), keep their names.
std::string in_set(std::string_view sql, const std::vector<std::string>& names) {
  std::string text(sql);
  const std::string suffix = set_suffix();
  for (const auto& name : names) {
    const std::string from = name + "(";
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + 1)) {
      if (at > 0 && is_identifier_char(text[at - 1]))
        continue;
      text.insert(at + name.size(), suffix);
      at += suffix.size();
    }
  }
  return text;
}

// Whether routine_sets records this release's set.
bool set_recorded(Connection& connection) {
  return !connection.prepare("read routine_sets", "SELECT 1 FROM routine_sets WHERE suffix = ?")
              .query({set_suffix()})
              .empty();
}

// Every login or role that may execute release 1.0's routine NAME (or an
// older set's: the name with any suffix) may execute this set's. Reading
// mysql.procs_priv needs a privilege the installer may lack: then nothing
// is granted here, and sql/mariadb/roles.sql grants the set's routines.
void copy_grants(Connection& connection, const std::vector<std::string>& names) {
  std::vector<Row> grants;
  try {
    grants = connection
                 .prepare("read the routines' grants",
                          "SELECT DISTINCT p.User, p.Host, p.Routine_name, p.Routine_type"
                          " FROM mysql.procs_priv p WHERE p.Db = DATABASE()"
                          " AND FIND_IN_SET('Execute', p.Proc_priv) > 0")
                 .query({});
  } catch (const ServerTrouble&) {
    return;
  }
  const std::string suffix = set_suffix();
  for (const Row& grant : grants) {
    const std::string user = grant.at(0).value_or("");
    const std::string host = grant.at(1).value_or("");
    std::string routine = grant.at(2).value_or("");
    if (auto r = routine.rfind("_r"); r != std::string::npos && routine.size() - r == suffix.size())
      routine.resize(r);
    if (std::find(names.begin(), names.end(), routine) == names.end())
      continue;
    // Names of ours ([a-z_0-9]) and the server's own account names, quoted.
    auto quote = [](const std::string& text) {
      std::string out = "'";
      for (char c : text)
        out += c == '\'' ? std::string("''") : std::string(1, c);
      return out + "'";
    };
    const std::string grantee = host.empty() ? "`" + user + "`" : quote(user) + "@" + quote(host);
    try {
      connection.execute("grant " + routine + suffix, "GRANT EXECUTE ON " +
                                                          grant.at(3).value_or("PROCEDURE") + " " +
                                                          routine + suffix + " TO " + grantee);
    } catch (const ServerTrouble&) {
      // No GRANT OPTION: sql/mariadb/roles.sql grants them.
    }
  }
}

// This release's routines with its suffix, unless routine_sets records them:
// created once, never replaced (a re-run after an interrupted install
// creates the same text again). The file of clock_status_rows, which every
// role may execute and whose presence says the set is there
// (procedures_installed), goes last; then the grants and the row.
void apply_set(Connection& connection) {
  if (set_recorded(connection))
    return;
  const auto names = defined_routines();
  const Migration* last = nullptr;
  for (const Migration& file : sql::mariadb_procedures()) {
    if (std::string_view(file.sql).find("PROCEDURE clock_status_rows(") != std::string_view::npos) {
      last = &file;
      continue;
    }
    connection.execute_script("procedures " + std::string(file.name), in_set(file.sql, names));
  }
  if (last)
    connection.execute_script("procedures " + std::string(last->name), in_set(last->sql, names));
  copy_grants(connection, names);
  connection
      .prepare("record routine_sets",
               "INSERT IGNORE INTO routine_sets (suffix, release_name, sha256) VALUES (?, ?, ?)")
      .execute({set_suffix(), std::string(CLOCK_VERSION),
                std::string(sql::mariadb_procedures_sha256())});
}

}  // namespace

std::string set_suffix() {
  return "_r" + std::string(sql::mariadb_procedures_sha256().substr(0, 8));
}

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
  // Release 1.0's routines as v1.0.0 applies them, then this release's set,
  // each file one statement for the client (DELIMITER), then their records.
  const std::string delimiter = k_print_delimiter;
  sql +=
      "\n-- sql/mariadb/release-1.0 (release 1.0's routines), then their stamp.\n"
      "DELIMITER " +
      delimiter + "\n";
  for (const Migration& file : sql::mariadb_release_1_0_procedures()) {
    sql += "\n-- " + std::string(file.name) + ".sql\n" + std::string(file.sql);
    if (!sql.ends_with('\n'))
      sql += '\n';
    sql += delimiter + "\n";
  }
  sql +=
      "DELIMITER ;\n"
      "INSERT INTO procedures_stamp (id, sha256) VALUES (1, '" +
      std::string(sql::mariadb_release_1_0_procedures_sha256()) +
      "')\n  ON DUPLICATE KEY UPDATE sha256 = VALUES(sha256), applied_at = UTC_TIMESTAMP(6);\n";
  const auto names = defined_routines();
  sql += "\n-- sql/mariadb/procedures as clock " CLOCK_VERSION "'s set (suffix " + set_suffix() +
         ").\nDELIMITER " + delimiter + "\n";
  for (const Migration& file : sql::mariadb_procedures()) {
    sql += "\n-- " + std::string(file.name) + ".sql\n" + in_set(file.sql, names);
    if (!sql.ends_with('\n'))
      sql += '\n';
    sql += delimiter + "\n";
  }
  sql += "DELIMITER ;\nINSERT IGNORE INTO routine_sets (suffix, release_name, sha256) VALUES ('" +
         set_suffix() + "', '" CLOCK_VERSION "', '" +
         std::string(sql::mariadb_procedures_sha256()) + "');\n";
  return sql;
}

FirstLook first_look(Connection& connection) {
  // Every version this binary knows, not max(version): numbers are assigned
  // to branches ahead of merging, so a schema may hold 003 and lack 002.
  // Not the procedures: reading information_schema.ROUTINES cost a new
  // session about 1 ms, and the first call finds a missing one anyway
  // (procedures_installed()).
  std::string versions;
  for (const Migration& migration : sql::mariadb_migrations()) {
    if (!versions.empty())
      versions += ',';
    versions += std::to_string(migration.version);
  }
  try {
    auto rows = connection
                    .prepare("check the schema version",
                             "SELECT (SELECT COUNT(*) FROM schema_migrations WHERE version IN (" +
                                 versions + ")) = ? /*M!100400 , @@wsrep_on */")
                    .query({static_cast<std::int64_t>(sql::mariadb_migrations().size())});
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

bool procedures_installed(Connection& connection) {
  // One routine of the set, by name, as the first look asked before (not
  // routine_sets, which not every login may read).
  return !connection
              .prepare("look for this release's procedures",
                       "SELECT 1 FROM information_schema.ROUTINES "
                       "WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME = ?")
              .query({"clock_status_rows" + set_suffix()})
              .empty();
}

MigrationReport migrate(Connection& connection, OldSets old_sets) {
  auto rows = connection
                  .prepare("take the migration lock",
                           "SELECT GET_LOCK(" + std::string(k_lock_name) + ", ?)")
                  .query({k_lock_wait_seconds});
  if (rows.empty() || rows[0].at(0) != "1") {
    throw Error(ExitCode::unavailable,
                "MariaDB: another clock init has been migrating this database for " +
                    std::to_string(k_lock_wait_seconds) + " s; try again when it is done");
  }
  MigrationReport report;
  try {
    report = apply_missing(connection);
    apply_release_1_0(connection);
    apply_set(connection);
    if (old_sets == OldSets::retire)
      retire_sets(connection);
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
  return report;
}

}  // namespace clk::store::mariadb
