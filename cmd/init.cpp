// clock init: create or migrate the schema, or print its DDL.
#include <spdlog/spdlog.h>

#include "cmd/commands.hpp"
#include "store/open_store.hpp"

namespace clk::cmd {

Action register_init(CLI::App& app) {
  struct Options {
    bool print_sql = false;
  };
  auto options = std::make_shared<Options>();
  auto* command = app.add_subcommand("init", "Create or migrate the schema");
  command->add_flag("--print-sql", options->print_sql,
                    "Print the DDL for a database administrator instead");
  command->footer("Example:\n  clock --database postgresql://clock_admin@db.example/clock init");
  return [options](Context& context) {
    if (options->print_sql) {
      print(store::schema_sql(context.settings.database_url, context.settings.pg_schema));
      return 0;
    }
    auto store = context.open_store();
    store->migrate();
    for (const auto& warning : store->setup_warnings())
      spdlog::warn("{}", warning);
    return 0;
  };
}

}  // namespace clk::cmd
