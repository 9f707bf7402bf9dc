// clock init: create or migrate the schema, or print its DDL.
#include <spdlog/spdlog.h>

#include "cmd/commands.hpp"
#include "store/database_url.hpp"
#include "store/open_store.hpp"

namespace clk::cmd {

namespace {

// One line on stdout: what clock init did, so that a script or an operator
// knows it ran ("created", "migrated", or "current").
std::string migration_summary(const store::MigrationReport& report, const std::string& database) {
  if (report.created) {
    return "created the clock schema in " + database + " (migrations up to " + report.latest +
           ")\n";
  }
  if (!report.applied.empty()) {
    std::string names;
    for (const auto& name : report.applied)
      names += (names.empty() ? "" : ", ") + name;
    return "migrated the clock schema in " + database + ": applied " + names + "\n";
  }
  return "the clock schema in " + database + " is current (" + report.latest +
         "); nothing to migrate\n";
}

}  // namespace

Action register_init(CLI::App& app) {
  struct Options {
    bool print_sql = false;
  };
  auto options = std::make_shared<Options>();
  auto* command = app.add_subcommand("init", "Create or migrate the schema");
  command->add_flag("--print-sql", options->print_sql,
                    "Print the DDL for a database administrator instead");
  command->footer(
      "Prints one line: what it created or migrated, or that the schema is current.\n"
      "Example:\n  clock --database postgresql://clock_admin@db.example/clock init");
  return [options](Context& context) {
    if (options->print_sql) {
      print(store::schema_sql(context.settings.database_url, context.settings.pg_schema));
      return 0;
    }
    auto store = context.open_store();
    auto report = store->migrate();
    for (const auto& warning : store->setup_warnings())
      spdlog::warn("{}", warning);
    print(migration_summary(report, store::mask_password(context.settings.database_url)));
    return 0;
  };
}

}  // namespace clk::cmd
