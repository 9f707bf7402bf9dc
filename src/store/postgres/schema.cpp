// Schema-name validation and the migration script built from the embedded
// sql/postgres migrations (DDL) and functions (current definitions).
#include "store/postgres/schema.hpp"

#include <algorithm>
#include <string_view>
#include <vector>

#include "error.hpp"
#include "store/migration.hpp"

namespace clk::store::postgres {

namespace {

constexpr std::size_t k_max_schema_length = 55;

// Functions an older schema may have that the current functions do not
// define: dropped before the functions are applied. status() was replaced by
// status_rows() and nothing calls it; the general paths of try_acquire() and
// release() are now the ends of those functions; find_cycle() returned the
// cycle as text, find_cycle_links() returns its links for the store to word.
constexpr std::string_view k_dropped_functions[] = {
    "status(text, text, boolean)",
    "find_cycle(uuid, text, uuid[], text[], text[], timestamptz)",
    "describe_owner(uuid, text)",
    "try_acquire_general(text, text[], text, integer, uuid, bigint, text, boolean, text, text, "
    "bigint, text, text, timestamptz)",
    "release_general(text, text[], uuid)",
    // Hierarchies lock rows of hierarchy_locks, not advisory keys (013).
    "lock_key(text, text)",
    // Queue entries keep their owner's secret hash (migration 012).
    "enqueue(text, text[], text, integer, uuid, bigint, text, text, text, bigint, text, text, "
    "timestamptz, timestamptz)",
    "queue_behind(text, text[], text[], uuid, bigint, text, text, text, bigint, text, text, "
    "timestamptz, timestamptz)",
};

// Functions whose signature changed: the old one is dropped like those
// above, and every role that could execute it may execute its successors,
// so a least-privilege role (sql/postgres/roles.sql) keeps working across
// the upgrade without roles.sql being run again.
struct Replaced {
  std::string_view old_signature;
  std::vector<std::string_view> successors;
};
// Successors are current signatures: an older schema may skip a step.
const Replaced k_replaced_functions[] = {
    {"try_acquire(text, text[], text, integer, uuid, bigint, text, boolean, text, text, bigint, "
     "text, text, timestamptz)",
     {"try_acquire(text, text[], text, integer, uuid, bigint, text, boolean, text, text, bigint, "
      "text, text, timestamptz, boolean, text, text, bigint)",
      "record_missed_run(text, text, text[], uuid, text, text, text, bigint, text, text, jsonb, "
      "text)",
      "expect_runs(text, text[], bigint, uuid, text, text)"}},
    // --once-per (migration 009), the owner's secret and who asks (010).
    {"try_acquire(text, text[], text, integer, uuid, bigint, text, boolean, text, text, bigint, "
     "text, text, timestamptz, boolean)",
     {"try_acquire(text, text[], text, integer, uuid, bigint, text, boolean, text, text, bigint, "
      "text, text, timestamptz, boolean, text, text, bigint)",
      "expect_runs(text, text[], bigint, uuid, text, text)"}},
    {"renew(text, text[], uuid, bigint[], bigint)",
     {"renew(text, text[], uuid, bigint[], bigint, text, text)",
      "note_leftovers(text, text[], uuid, bigint[], jsonb, text, text)"}},
    {"release(text, text[], uuid)",
     {"release(text, text[], uuid, text, text, text, bigint[], boolean)",
      "release2(text, text[], uuid, text, text, text, bigint[], boolean, integer, integer)"}},
    {"history(text, text, integer)",
     {"history(text, text, integer, text)",
      "history2(text, text, integer, text, bigint, bigint, text)", "run_results(text, text)"}},
    // The owner's proof for every act in its name (migration 012).
    {"leave_queue(text, text[], uuid, text)", {"leave_queue(text, text[], uuid, text, text)"}},
    {"record_missed_run(text, text, text[], uuid, text, text, text, bigint, text, text, jsonb)",
     {"record_missed_run(text, text, text[], uuid, text, text, text, bigint, text, text, jsonb, "
      "text)"}},
    // Same arguments, a column more (db_user, 012): a function's result type
    // changes only by dropping it, so it is dropped and re-granted each time
    // the functions are applied. Whoever may read the status may also read
    // expected periods (014): a least-privilege role keeps status, and gains
    // missed runs, without roles.sql being run again.
    {"status_rows(text, text, boolean)",
     {"status_rows(text, text, boolean)", "expected_rows(text, text, bigint)"}},
    // Only the holder declares a period, with its secret.
    {"expect_runs(text, text[], bigint)", {"expect_runs(text, text[], bigint, uuid, text, text)"}},
};

// New functions that every role that may execute an existing one may
// execute too, so that a least-privilege role (sql/postgres/roles.sql)
// gains them at the upgrade without roles.sql being run again. The
// existing function stays as it is.
struct GrantedBeside {
  std::string_view existing;
  std::string_view added;
};
// Whoever may renew may record its leftovers (migration 015); whoever may
// acquire may declare the expected period of what it holds (014), and a
// reader of the status (clock_reader) may not.
constexpr GrantedBeside k_granted_beside[] = {
    {"renew(text, text[], uuid, bigint[], bigint, text, text)",
     "note_leftovers(text, text[], uuid, bigint[], jsonb, text, text)"},
    {"try_acquire(text, text[], text, integer, uuid, bigint, text, boolean, text, text, bigint, "
     "text, text, timestamptz, boolean, text, text, bigint)",
     "expect_runs(text, text[], bigint, uuid, text, text)"},
    // Whoever may release may record how its run ended, and whoever may read
    // history may read it with --since/--host and the run results (016).
    {"release(text, text[], uuid, text, text, text, bigint[], boolean)",
     "release2(text, text[], uuid, text, text, text, bigint[], boolean, integer, integer)"},
    {"history(text, text, integer, text)",
     "history2(text, text, integer, text, bigint, bigint, text)"},
    {"history(text, text, integer, text)", "run_results(text, text)"},
};

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

// Dollar-quotes a migration's text for EXECUTE inside a DO block.
std::string dollar_quoted(const std::string& sql, int version) {
  std::string tag = "$clock_" + std::to_string(version) + "$";
  if (sql.find("$clock") != std::string::npos) {
    throw Error(ExitCode::internal, "sql file " + std::to_string(version) +
                                        " contains the reserved dollar-quote tag $clock");
  }
  return tag + "\n" + sql + tag;
}

}  // namespace

void validate_schema_name(const std::string& schema) {
  bool valid = !schema.empty() && schema.size() <= k_max_schema_length &&
               !schema.starts_with("pg_") && !(schema[0] >= '0' && schema[0] <= '9');
  valid = valid && std::all_of(schema.begin(), schema.end(), [](char c) {
            return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
          });
  if (!valid) {
    std::string shown = schema.substr(0, 64);
    std::replace_if(
        shown.begin(), shown.end(), [](char c) { return c < 0x20 || c >= 0x7f; }, '?');
    throw Error(ExitCode::config,
                "invalid PostgreSQL schema name '" + shown +
                    "': use lower-case letters, digits and '_', starting with a letter or '_', "
                    "at most 55 characters, not starting with pg_ (setting postgres.schema)");
  }
}

std::string quoted(const std::string& schema) {
  return "\"" + schema + "\"";
}

std::string notify_channel(const std::string& schema) {
  return schema + "_changed";
}

std::string lost_channel(const std::string& schema) {
  return schema + "_lost";
}

std::string substitute(std::string_view sql, const std::string& schema) {
  validate_schema_name(schema);
  std::string text(sql);
  replace_all(text, "@schema_name@", schema);
  replace_all(text, "@schema@", quoted(schema));
  return text;
}

int latest_version() {
  int latest = 0;
  for (const auto& migration : sql::postgres_migrations()) {
    latest = std::max(latest, migration.version);
  }
  return latest;
}

std::string functions_stamp() {
  return "clock functions sha256:" + std::string(sql::postgres_functions_sha256());
}

std::string ready_condition(const std::string& schema) {
  // Every version this binary knows, not max(version): numbers are assigned
  // to branches ahead of merging, so a schema may hold 008 and lack 007.
  const std::string q = quoted(schema);
  std::string versions;
  for (const auto& migration : sql::postgres_migrations()) {
    if (!versions.empty())
      versions += ',';
    versions += std::to_string(migration.version);
  }
  return "(SELECT count(*) FROM " + q + ".schema_migrations WHERE version = ANY ('{" + versions +
         "}'::integer[])) = " + std::to_string(sql::postgres_migrations().size()) +
         " AND obj_description(to_regnamespace('" + q + "'), 'pg_namespace') = '" +
         functions_stamp() + "'";
}

namespace {

// Re-applies every function when the schema's stamp is not this binary's.
// Under the migration lock, so two processes never apply at once; the second
// sees the first's stamp (READ COMMITTED: a fresh snapshot per statement).
std::string functions_block(const std::string& schema) {
  const std::string q = quoted(schema);
  std::string block =
      "\n-- sql/postgres/functions, when their stamp differs\nDO $clock$\nDECLARE\n"
      "  v_grantees text[];\n  v_role text;\nBEGIN\n"
      "  IF obj_description(to_regnamespace('" +
      q + "'), 'pg_namespace') IS DISTINCT FROM '" + functions_stamp() + "' THEN\n";
  for (auto dropped : k_dropped_functions) {
    block += "    DROP FUNCTION IF EXISTS " + q + "." + std::string(dropped) + ";\n";
  }
  // Each replaced function's grantees, as "role<US>successor" pairs (US: the
  // unit separator, in no identifier), granted once the successors exist.
  block += "    v_grantees := '{}';\n";
  for (const auto& replaced : k_replaced_functions) {
    const std::string old_function = q + "." + std::string(replaced.old_signature);
    for (auto successor : replaced.successors) {
      block +=
          "    v_grantees := v_grantees || ARRAY(SELECT quote_ident(r.rolname) || chr(31) || '" +
          q + "." + std::string(successor) +
          "' FROM pg_proc AS p, aclexplode(p.proacl) AS a, pg_roles AS r"
          " WHERE p.oid = to_regprocedure('" +
          old_function +
          "') AND a.privilege_type = 'EXECUTE' AND r.oid = a.grantee"
          " AND a.grantee <> p.proowner);\n";
    }
    block += "    DROP FUNCTION IF EXISTS " + old_function + ";\n";
  }
  for (const auto& beside : k_granted_beside) {
    block += "    v_grantees := v_grantees || ARRAY(SELECT quote_ident(r.rolname) || chr(31) || '" +
             q + "." + std::string(beside.added) +
             "' FROM pg_proc AS p, aclexplode(p.proacl) AS a, pg_roles AS r"
             " WHERE p.oid = to_regprocedure('" +
             q + "." + std::string(beside.existing) +
             "') AND a.privilege_type = 'EXECUTE' AND r.oid = a.grantee"
             " AND a.grantee <> p.proowner);\n";
  }
  for (const auto& file : sql::postgres_functions()) {
    block += "    -- " + std::string(file.name) + "\n    EXECUTE " +
             dollar_quoted(substitute(file.sql, schema), file.version) + ";\n";
  }
  block += "    REVOKE ALL ON ALL FUNCTIONS IN SCHEMA " + q +
           " FROM PUBLIC;\n"
           "    FOREACH v_role IN ARRAY v_grantees LOOP\n"
           "      EXECUTE 'GRANT EXECUTE ON FUNCTION ' || split_part(v_role, chr(31), 2) ||\n"
           "              ' TO ' || split_part(v_role, chr(31), 1);\n"
           "    END LOOP;\n"
           "    COMMENT ON SCHEMA " +
           q + " IS '" + functions_stamp() + "';\n  END IF;\nEND $clock$;\n";
  return block;
}

}  // namespace

std::string migration_script(const std::string& schema) {
  validate_schema_name(schema);
  const std::string q = quoted(schema);
  std::string script =
      "-- clock schema " + q + " for PostgreSQL, migrations 1 to " +
      std::to_string(latest_version()) +
      ".\n"
      "-- One transaction: creates what is missing, applies each migration not yet\n"
      "-- recorded in " +
      q +
      ".schema_migrations, then re-applies the functions (sql/postgres/functions)\n"
      "-- if the schema's comment does not carry their hash, so it is safe to run again.\n"
      "-- Apply as the role that is to own the schema (not a superuser, ideally), e.g.\n"
      "--   psql -v ON_ERROR_STOP=1 -f clock.sql\n"
      "-- then grant access with sql/postgres/roles.sql.\n\n"
      "BEGIN;\n"
      "SELECT pg_advisory_xact_lock(" +
      std::to_string(k_migration_lock_key) +
      ");\n"
      "DO $clock$\nBEGIN\n"
      "  IF to_regnamespace('" +
      q +
      "') IS NULL THEN\n"
      "    CREATE SCHEMA " +
      q +
      ";\n"
      "  END IF;\n"
      "  IF to_regclass('" +
      q +
      ".schema_migrations') IS NULL THEN\n"
      "    CREATE TABLE " +
      q +
      ".schema_migrations (\n"
      "      version    integer PRIMARY KEY,\n"
      "      name       text NOT NULL,\n"
      "      applied_at timestamptz NOT NULL DEFAULT now()\n"
      "    );\n"
      "  END IF;\n"
      "END $clock$;\n";
  for (const auto& migration : sql::postgres_migrations()) {
    const std::string version = std::to_string(migration.version);
    script += "\n-- " + std::string(migration.name) +
              "\nDO $clock$\nBEGIN\n"
              "  IF NOT EXISTS (SELECT FROM " +
              q + ".schema_migrations WHERE version = " + version + ") THEN\n    EXECUTE " +
              dollar_quoted(substitute(migration.sql, schema), migration.version) +
              ";\n    INSERT INTO " + q + ".schema_migrations (version, name) VALUES (" + version +
              ", '" + std::string(migration.name) + "');\n  END IF;\nEND $clock$;\n";
  }
  script += functions_block(schema);
  script += "\nCOMMIT;\n";
  return script;
}

}  // namespace clk::store::postgres
