// The MariaDB schema: the embedded migrations of sql/mariadb/migrations and
// procedures of sql/mariadb/procedures, applied by `clock init` and printed
// by `clock init --print-sql`.
#pragma once

#include <string>

#include "store/store.hpp"

namespace clk::store::mariadb {

class Connection;

// The suffix of this release's routines (docs/upgrades.md): "_r" and the
// first 8 hex of the sha256 of sql/mariadb/procedures, e.g. clock_renew_r1a2b3c4d.
// Release 1.0's routines have none.
std::string set_suffix();

// The newest migration version this binary knows.
int latest_version();

// The DDL for a database administrator: the bookkeeping table, then every
// migration and the row that records it, then every procedure file (between
// DELIMITER lines, so the client sends each file whole) and their stamp. Runs with the mariadb
// client
// (`mariadb DB < file`) on an empty database, or again on one it made.
std::string print_sql();

// Applies each embedded migration that schema_migrations does not list, in
// order, under GET_LOCK('clock.migrate.<database>') so that two hosts
// migrating at once take turns (MariaDB commits DDL at once: a migration is
// not one transaction, so each file is written to be run again); then, under
// the same lock, applies every procedure file again if procedures_stamp does
// not hold the sha256 of this binary's files, and records it. A login
// that may not create what is missing gets clk::Error(config). Returns
// which migrations it applied. clock init, and only it, also drops the
// routine sets of releases that may no longer run (routine_sets.hpp).
enum class OldSets { keep, retire };
MigrationReport migrate(Connection& connection, OldSets old_sets);

// What a process learns of the database before its first operation, in
// one query and no lock.
struct FirstLook {
  // It holds every migration this binary knows (false for a database with
  // no clock tables). Whether this release's procedures are there is
  // learned from the first call (procedures_installed()).
  bool current = false;
  // The server is a Galera node (wsrep_on; MySQL has none).
  bool galera = false;
};
FirstLook first_look(Connection& connection);

// Whether this release's procedures are installed: asked only when a call
// failed as a call of a missing procedure does (1305, or 1370 for a login
// that may execute none of that name).
bool procedures_installed(Connection& connection);

}  // namespace clk::store::mariadb
