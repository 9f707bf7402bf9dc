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

// A migration's SQL with @schema@ (quoted) and @schema_name@ (bare) replaced.
std::string substitute(std::string_view sql, const std::string& schema);

// The newest migration version this binary knows.
int latest_version();

// One transaction that takes the migration lock, creates the schema and its
// schema_migrations table if missing, and applies each embedded migration
// not yet recorded there. Safe to run again; a role that may not create
// objects fails only if something is missing.
std::string migration_script(const std::string& schema);

}  // namespace clk::store::postgres
