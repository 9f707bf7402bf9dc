// See routine_sets.hpp.
#include "store/postgres/routine_sets.hpp"

#include <exception>

#include "store/postgres/schema.hpp"

namespace clk::store::postgres {

namespace {

// The oldest release that may still run beside this one, as a "{major,minor}"
// integer array: adjacent releases only (docs/upgrades.md).
std::string oldest_running() {
  const std::string release = postgres::release();
  const auto dot = release.find('.');
  const int major = std::stoi(release.substr(0, dot));
  const int minor = std::stoi(release.substr(dot + 1));
  return "'{" + std::to_string(major) + "," + std::to_string(minor > 0 ? minor - 1 : 0) +
         "}'::integer[]";
}

// The rows of routine_sets no release that may still run needs: sets of
// their own schema (never the schema itself).
std::string retired_rows(const std::string& schema) {
  return "FROM " + quoted(schema) + ".routine_sets WHERE name <> '" + schema +
         "' AND (string_to_array(split_part(release, '-', 1), '.')::integer[])[1:2] < " +
         oldest_running();
}

}  // namespace

std::string retire_script(const std::string& schema) {
  validate_schema_name(schema);
  return "BEGIN;\nSELECT pg_advisory_xact_lock(" + std::to_string(k_migration_lock_key) +
         ");\n"
         "DO $clock$\nDECLARE\n  v_name text;\nBEGIN\n"
         "  FOR v_name IN SELECT name " +
         retired_rows(schema) +
         " LOOP\n"
         "    EXECUTE 'DROP SCHEMA IF EXISTS ' || quote_ident(v_name) || ' CASCADE';\n"
         "    DELETE FROM " +
         quoted(schema) +
         ".routine_sets WHERE name = v_name;\n"
         "  END LOOP;\nEND $clock$;\nCOMMIT;\n";
}

std::optional<std::string> retired_sets_warning(Connection& conn, const std::string& schema) {
  std::string names;
  try {
    names = conn.call("the routine sets check",
                      "SELECT coalesce(string_agg(name || ' (clock ' || release || ')', ', ' "
                      "ORDER BY name), '') " +
                          retired_rows(schema),
                      {}, Retry::if_broken);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (names.empty())
    return std::nullopt;
  return "the schemas " + names + " hold functions kept only for releases older than clock " +
         release() +
         "'s previous one, which no host may still run (docs/upgrades.md): run 'clock init' of "
         "clock " +
         release() + " as the schema's owner to drop them";
}

}  // namespace clk::store::postgres
