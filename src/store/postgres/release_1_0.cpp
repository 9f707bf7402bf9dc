// Release 1.0's functions in the clock schema itself, kept working beside
// this release's set (docs/upgrades.md): the same files (frozen in
// sql/postgres/release-1.0), dropped and replaced lists and stamp as v1.0.0's
// binary applies, so that a v1.0.0 host finds its schema ready and never
// re-applies them. Nothing here changes after the release: a later change
// of the functions goes to sql/postgres/functions, which are installed as a
// set of their own (schema.cpp).
#include "store/postgres/release_1_0.hpp"

#include <string>
#include <string_view>
#include <vector>

#include "error.hpp"
#include "store/migration.hpp"
#include "store/postgres/grant_carry.hpp"
#include "store/postgres/schema.hpp"

namespace clk::store::postgres {

namespace {

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
// Successors are current signatures: an older schema may skip a step.
const ReplacedFunction k_release_1_0_replaced_functions[] = {
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
     {"release(text, text[], uuid, text, text, text, bigint[], boolean)"}},
    {"history(text, text, integer)", {"history(text, text, integer, text)"}},
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
// Whoever may renew may record its leftovers (migration 015); whoever may
// acquire may declare the expected period of what it holds (014), and a
// reader of the status (clock_reader) may not.
constexpr GrantedBeside k_release_1_0_granted_beside[] = {
    {"renew(text, text[], uuid, bigint[], bigint, text, text)",
     "note_leftovers(text, text[], uuid, bigint[], jsonb, text, text)"},
    {"try_acquire(text, text[], text, integer, uuid, bigint, text, boolean, text, text, bigint, "
     "text, text, timestamptz, boolean, text, text, bigint)",
     "expect_runs(text, text[], bigint, uuid, text, text)"},
};

}  // namespace

std::string release_1_0_stamp() {
  return "clock functions sha256:" + std::string(sql::postgres_release_1_0_functions_sha256());
}

// Re-applies release 1.0's functions when the schema's stamp is not theirs,
// as release 1.0 itself does (its functions_block, unchanged).
// Under the migration lock, so two processes never apply at once; the second
// sees the first's stamp (READ COMMITTED: a fresh snapshot per statement).
std::string release_1_0_block(const std::string& schema) {
  const std::string q = quoted(schema);
  std::string block =
      "\n-- release 1.0's functions (sql/postgres/release-1.0), when their stamp differs\nDO "
      "$clock$\nDECLARE\n"
      "  v_grantees text[];\n  v_role text;\nBEGIN\n"
      "  IF obj_description(to_regnamespace('" +
      q + "'), 'pg_namespace') IS DISTINCT FROM '" + release_1_0_stamp() + "' THEN\n";
  for (auto dropped : k_dropped_functions) {
    block += "    DROP FUNCTION IF EXISTS " + q + "." + std::string(dropped) + ";\n";
  }
  // Each replaced function's grantees, as "role<US>successor" pairs (US: the
  // unit separator, in no identifier), granted once the successors exist.
  block += "    v_grantees := '{}';\n";
  for (const auto& replaced : k_release_1_0_replaced_functions) {
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
  for (const auto& beside : k_release_1_0_granted_beside) {
    block += "    v_grantees := v_grantees || ARRAY(SELECT quote_ident(r.rolname) || chr(31) || '" +
             q + "." + std::string(beside.added) +
             "' FROM pg_proc AS p, aclexplode(p.proacl) AS a, pg_roles AS r"
             " WHERE p.oid = to_regprocedure('" +
             q + "." + std::string(beside.existing) +
             "') AND a.privilege_type = 'EXECUTE' AND r.oid = a.grantee"
             " AND a.grantee <> p.proowner);\n";
  }
  for (const auto& file : sql::postgres_release_1_0_functions()) {
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
           q + " IS '" + release_1_0_stamp() + "';\n  END IF;\nEND $clock$;\n";
  return block;
}

}  // namespace clk::store::postgres
