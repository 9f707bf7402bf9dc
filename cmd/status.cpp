// clock status: who holds what, since when, from where, and who waits.
#include "cmd/commands.hpp"

namespace clk::cmd {

Action register_status(CLI::App& app) {
  struct Options {
    std::optional<std::string> prefix;
    std::string format = "table";
    bool all = false;
  };
  auto options = std::make_shared<Options>();
  auto* command = app.add_subcommand("status", "Show holders and waiters");
  command->add_option("prefix", options->prefix, "Only this resource and those below it");
  command->add_option("--format", options->format,
                      "table, json or prometheus (node_exporter textfile)");
  command->add_flag("--all", options->all, "Include expired leases not yet collected");
  command->footer("Example:\n  clock status ldap\n  clock status --format json | jq .holders");
  return [options](Context& context) {
    auto format = format_flag(
        options->format, {output::Format::table, output::Format::json, output::Format::prometheus});
    store::StatusQuery query;
    if (context.settings.ns_given)
      query.ns = context.settings.ns;
    if (options->prefix)
      query.prefix = lock::Resource::parse(*options->prefix);
    query.include_expired = options->all;
    print(output::render_status(context.open_store()->status(query), format));
    return 0;
  };
}

}  // namespace clk::cmd
