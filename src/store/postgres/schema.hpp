// The PostgreSQL schema as text: the configured schema name, validated, put
// into the embedded migrations of sql/postgres, and the one script that
// creates or migrates a schema (run by `clock init` and printed by
// `clock init --print-sql`). No I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace clk::store::postgres {

// The key of the transaction-level advisory lock held while migrating, so
// that two hosts starting at once do not both apply a migration ("clockmig").
constexpr std::int64_t k_migration_lock_key = 0x636c6f636b6d6967;

// Checks a schema name from the configuration: [a-z_][a-z0-9_]*, at most 55
// characters (the notification channel appends "_changed" within
// PostgreSQL's 63), not starting with "pg_". Throws clk::Error(config).
void validate_schema_name(const std::string& schema);

// The schema name as a quoted SQL identifier: clock → "clock".
std::string quoted(const std::string& schema);

// The channel that the SQL functions notify on a change (001_schema.sql).
std::string notify_channel(const std::string& schema);

// The channel on which a holder hears that its lease was taken: the payload
// is the owner id (notify_lost in sql/postgres/functions/10_util.sql).
std::string lost_channel(const std::string& schema);

// A migration's SQL with @schema@ (quoted) and @schema_name@ (bare) replaced.
std::string substitute(std::string_view sql, const std::string& schema);

// The newest migration version this binary knows.
int latest_version();

// sql's text dollar-quoted for EXECUTE inside a DO block (the tag names the
// file's number). Throws clk::Error(internal) if the text uses the tag.
std::string dollar_quoted(const std::string& sql, int version);

// "clock functions sha256:<hex of sql/postgres/functions/*.sql>".
std::string functions_stamp();

// This binary's release (clock --version), recorded with its set.
std::string release();

// The schema that holds this release's functions (docs/upgrades.md): the
// schema's name (its first 49 characters), "_r", and the first 6 hex of
// the hash of the functions and of the migrations, e.g. clock_r1a2b3c4d5e6f.
// Tables stay in the schema.
std::string routine_set(const std::string& schema);

// What COMMENT ON SCHEMA holds for the set of `schema`: functions_stamp()
// and the schema it serves.
std::string routine_set_stamp(const std::string& schema);

// An SQL boolean that a call into the set must meet besides the set's
// existence, "" for none: a set exists only where every migration of this
// binary has been applied (whatever else the schema has: a newer binary's,
// or numbers with gaps), so its existence is the check, and costs a new
// backend nothing. Only for a schema whose name the set's name cuts short
// (over 49 characters) must the set's stamp name this schema. Readable by
// any role.
std::string ready_condition(const std::string& schema);

// One transaction that takes the migration lock, creates the schema and its
// schema_migrations table if missing, applies each embedded migration not
// yet recorded there (gaps in the numbers are fine), then keeps release
// 1.0's functions as v1.0.0 applies them (release_1_0.hpp) and creates this
// release's set if it is missing (an existing set is never replaced).
// Safe to run again; a role that may not create objects fails only if
// something is missing or stale.
std::string migration_script(const std::string& schema);

}  // namespace clk::store::postgres
