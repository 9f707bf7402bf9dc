// clock history: past grants, releases, expiries, forced releases and lost leases.
#include "cmd/commands.hpp"

namespace clk::cmd {

Action register_history(CLI::App& app) {
  struct Options {
    std::optional<std::string> prefix;
    int limit = 50;
    std::string format = "table";
  };
  auto options = std::make_shared<Options>();
  auto* command = app.add_subcommand("history", "Show past grants and releases, newest first");
  command->add_option("prefix", options->prefix, "Only this resource and those below it");
  command->add_option("--limit", options->limit, "At most N events (default 50)")
      ->check(CLI::Range(1, 1'000'000));
  command->add_option("--format", options->format, "table or json");
  command->footer(
      "JSON Schema of --format json: /usr/share/doc/clock/schema/history.schema.json\n"
      "Example:\n  clock history bootstrap --limit 20");
  return [options](Context& context) {
    auto format = format_flag(options->format, {output::Format::table, output::Format::json});
    store::HistoryQuery query;
    if (context.settings.ns_given)
      query.ns = context.settings.ns;
    if (options->prefix)
      query.prefix = lock::Resource::parse(*options->prefix);
    query.limit = options->limit;
    print(output::render_history(context.open_store()->history(query), format));
    return 0;
  };
}

}  // namespace clk::cmd
