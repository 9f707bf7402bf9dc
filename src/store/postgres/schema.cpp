// Schema-name validation and the migration script built from the embedded
// sql/postgres migrations (DDL) and functions (this release's set, beside
// release 1.0's: docs/upgrades.md).
#include "store/postgres/schema.hpp"

#include <algorithm>
#include <string_view>
#include <vector>

#include "error.hpp"
#include "store/migration.hpp"
#include "store/postgres/grant_carry.hpp"
#include "store/postgres/release_1_0.hpp"

namespace clk::store::postgres {

namespace {

constexpr std::size_t k_max_schema_length = 55;
// How much of a schema's name its routine set's name keeps (routine_set()).
constexpr std::size_t k_set_schema_prefix = 49;

// Functions whose signature changed since an older release: every role that
// could execute the old one (by name, in any older set) may execute its
// successors in a new set, so a least-privilege role (sql/postgres/roles.sql)
// keeps working across the upgrade without roles.sql being run again.
// Successors are current signatures: an older schema may skip a step.
const ReplacedFunction k_replaced_functions[] = {
    {"try_acquire(text, text[], text, integer, uuid, bigint, text, boolean, text, text, bigint, "
     "text, text, timestamptz)",
     {"try_acquire(text, text[], text, integer, uuid, bigint, text, boolean, text, text, bigint, "
      "text, text, timestamptz, boolean, text, text, bigint, jsonb)",
      "record_missed_run(text, text, text[], uuid, text, text, text, bigint, text, text, jsonb, "
      "text)",
      "expect_runs(text, text[], bigint, uuid, text, text)"}},
    // --once-per (migration 009), the owner's secret and who asks (010).
    {"try_acquire(text, text[], text, integer, uuid, bigint, text, boolean, text, text, bigint, "
     "text, text, timestamptz, boolean)",
     {"try_acquire(text, text[], text, integer, uuid, bigint, text, boolean, text, text, bigint, "
      "text, text, timestamptz, boolean, text, text, bigint, jsonb)",
      "expect_runs(text, text[], bigint, uuid, text, text)"}},
    {"renew(text, text[], uuid, bigint[], bigint)",
     {"renew(text, text[], uuid, bigint[], bigint, text, text)",
      "note_leftovers(text, text[], uuid, bigint[], jsonb, text, text)",
      "holder_trace(text, text, uuid, bigint, text, bigint)",
      "end_dead_lease(text, text, uuid, bigint, text, bigint, bigint, bigint, text)"}},
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

// New functions that every role that may execute an existing one (by name,
// in any older set) may execute too in a new set, so that a least-privilege
// role (sql/postgres/roles.sql) gains them at the upgrade without roles.sql
// being run again.
// Whoever may renew may record its leftovers (migration 015), read a
// holder's trace and end a dead holder's lease (017, docs/dead-holder.md);
// whoever may acquire may declare the expected period of what it holds
// (014), and a reader of the status (clock_reader) may not.
constexpr GrantedBeside k_granted_beside[] = {
    {"renew(text, text[], uuid, bigint[], bigint, text, text)",
     "note_leftovers(text, text[], uuid, bigint[], jsonb, text, text)"},
    {"renew(text, text[], uuid, bigint[], bigint, text, text)",
     "holder_trace(text, text, uuid, bigint, text, bigint)"},
    {"renew(text, text[], uuid, bigint[], bigint, text, text)",
     "end_dead_lease(text, text, uuid, bigint, text, bigint, bigint, bigint, text)"},
    {"try_acquire(text, text[], text, integer, uuid, bigint, text, boolean, text, text, bigint, "
     "text, text, timestamptz, boolean, text, text, bigint, jsonb)",
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

std::string dollar_quoted(const std::string& sql, int version) {
  std::string tag = "$clock_" + std::to_string(version) + "$";
  if (sql.find("$clock") != std::string::npos) {
    throw Error(ExitCode::internal, "sql file " + std::to_string(version) +
                                        " contains the reserved dollar-quote tag $clock");
  }
  return tag + "\n" + sql + tag;
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

std::string release() {
  return CLOCK_VERSION;
}

std::string routine_set(const std::string& schema) {
  // Within PostgreSQL's 63 bytes: a schema name of up to 55 keeps its first
  // 49 characters. The set's stamp names its schema, so two schemas that
  // share those 49 never share a set (set_block refuses). The name covers
  // the migrations as well as the functions: the set is made in the
  // transaction that applies this binary's migrations, so where it exists
  // they are applied, and a release that adds a migration alone still gets
  // a set of its own (ready_condition() counts on it).
  return schema.substr(0, k_set_schema_prefix) + "_r" +
         std::string(sql::postgres_functions_sha256().substr(0, 6)) +
         std::string(sql::postgres_migrations_sha256().substr(0, 6));
}

std::string routine_set_stamp(const std::string& schema) {
  return functions_stamp() + " for " + schema;
}

namespace {

// The names that the functions' files define (CREATE [OR REPLACE] FUNCTION
// @schema@.NAME), in file order.
std::vector<std::string> defined_functions() {
  std::vector<std::string> names;
  for (const auto& file : sql::postgres_functions()) {
    std::string_view text = file.sql;
    for (std::string_view create :
         {"CREATE OR REPLACE FUNCTION @schema@.", "CREATE FUNCTION @schema@."}) {
      for (auto at = text.find(create); at != std::string_view::npos;
           at = text.find(create, at + 1)) {
        auto begin = at + create.size();
        auto end = text.find('(', begin);
        std::string name(text.substr(begin, end - begin));
        if (std::find(names.begin(), names.end(), name) == names.end())
          names.push_back(std::move(name));
      }
    }
  }
  return names;
}

// A function file as installed in the set: every @schema@.NAME( of a
// function the files define becomes the set's, tables and types stay the
// schema's (@schema@), and notification channels stay the schema's too
// (@schema_name@), so that every release's holders and waiters hear one
// another.
std::string in_set(std::string_view sql, const std::string& schema,
                   const std::vector<std::string>& names) {
  std::string text(sql);
  const std::string set = quoted(routine_set(schema));
  for (const auto& name : names) {
    replace_all(text, "@schema@." + name + "(", set + "." + name + "(");
  }
  return substitute(text, schema);
}

// Names (before the arguments) of signatures.
std::string name_of(std::string_view signature) {
  return std::string(signature.substr(0, signature.find('(')));
}

// The names whose grantees a new set's function NAME gets: its own, and
// those it succeeds or is granted beside.
std::vector<std::string> grant_sources(const std::string& name) {
  std::vector<std::string> sources{name};
  for (const auto& replaced : k_replaced_functions) {
    for (auto successor : replaced.successors) {
      if (name_of(successor) == name)
        sources.push_back(name_of(replaced.old_signature));
    }
  }
  for (const auto& beside : k_granted_beside) {
    if (name_of(beside.added) == name)
      sources.push_back(name_of(beside.existing));
  }
  return sources;
}

// Installs this release's functions as a schema of their own
// (routine_set()) when it is missing, and never touches an existing one:
// an older release's functions stay in their place (the clock schema
// itself for release 1.0, release_1_0.cpp), a newer's in theirs. The roles
// that may use the schema may use the set; those that may execute a
// function of an older set may execute the same name in the new one.
std::string set_block(const std::string& schema) {
  const std::string q = quoted(schema);
  const std::string set_name = routine_set(schema);
  const std::string set = quoted(set_name);
  const auto names = defined_functions();
  std::string block = "\n-- sql/postgres/functions, as the set " + set +
                      ", unless it exists\nDO $clock$\nDECLARE\n"
                      "  v_role text;\n  v_function text;\nBEGIN\n"
                      "  IF to_regnamespace('" +
                      set +
                      "') IS NOT NULL THEN\n"
                      "    IF obj_description(to_regnamespace('" +
                      set + "'), 'pg_namespace') IS DISTINCT FROM '" + routine_set_stamp(schema) +
                      "' THEN\n"
                      "      RAISE EXCEPTION 'schema " +
                      set_name + " exists but does not hold the functions of schema " + schema +
                      " that clock " + release() +
                      " installs: rename or drop it';\n"
                      "    END IF;\n"
                      "    RETURN;\n  END IF;\n"
                      "  CREATE SCHEMA " +
                      set + ";\n";
  for (const auto& file : sql::postgres_functions()) {
    block += "  -- " + std::string(file.name) + "\n  EXECUTE " +
             dollar_quoted(in_set(file.sql, schema, names), file.version) + ";\n";
  }
  block += "  REVOKE ALL ON ALL FUNCTIONS IN SCHEMA " + set +
           " FROM PUBLIC;\n"
           "  FOR v_role IN SELECT quote_ident(r.rolname)"
           " FROM pg_namespace AS n, aclexplode(n.nspacl) AS a, pg_roles AS r"
           " WHERE n.oid = to_regnamespace('" +
           q +
           "') AND a.privilege_type = 'USAGE' AND r.oid = a.grantee"
           " AND a.grantee <> n.nspowner LOOP\n"
           "    EXECUTE 'GRANT USAGE ON SCHEMA " +
           set + " TO ' || v_role;\n  END LOOP;\n";
  for (const auto& name : names) {
    std::string sources;
    for (const auto& source : grant_sources(name)) {
      sources += (sources.empty() ? "" : ",") + source;
    }
    block +=
        "  FOR v_role, v_function IN SELECT DISTINCT quote_ident(r.rolname), "
        "f.oid::regprocedure::text"
        " FROM pg_proc AS p, aclexplode(p.proacl) AS a, pg_roles AS r, pg_proc AS f"
        " WHERE (p.pronamespace = to_regnamespace('" +
        q + "') OR p.pronamespace IN (SELECT to_regnamespace(quote_ident(s.name)) FROM " + q +
        ".routine_sets AS s)) AND p.proname = ANY ('{" + sources +
        "}') AND a.privilege_type = 'EXECUTE' AND r.oid = a.grantee"
        " AND a.grantee <> p.proowner AND f.pronamespace = to_regnamespace('" +
        set + "') AND f.proname = '" + name +
        "' LOOP\n"
        "    EXECUTE 'GRANT EXECUTE ON FUNCTION ' || v_function || ' TO ' || v_role;\n"
        "  END LOOP;\n";
  }
  block += "  COMMENT ON SCHEMA " + set + " IS '" + routine_set_stamp(schema) +
           "';\n"
           "  INSERT INTO " +
           q + ".routine_sets (name, release, stamp) VALUES ('" + set_name + "', '" + release() +
           "', '" + functions_stamp() + "') ON CONFLICT (name) DO NOTHING;\nEND $clock$;\n";
  return block;
}

}  // namespace

std::string ready_condition(const std::string& schema) {
  // The set's existence says it all (routine_set()): a call into a set that
  // does not exist fails (undefined schema or function), and the caller
  // migrates. Only where the schema's name is cut short in the set's name
  // could the set be another schema's: its stamp tells.
  if (schema.size() <= k_set_schema_prefix)
    return "";
  return "obj_description(to_regnamespace('" + quoted(routine_set(schema)) +
         "'), 'pg_namespace') = '" + routine_set_stamp(schema) + "'";
}

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
      ".schema_migrations, keeps release 1.0's functions in the schema and creates\n"
      "-- this release's (clock " +
      release() + ") in " + quoted(routine_set(schema)) +
      " if missing, so it is safe to run again.\n"
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
  script += release_1_0_block(schema);
  script += set_block(schema);
  script += "\nCOMMIT;\n";
  return script;
}

}  // namespace clk::store::postgres
