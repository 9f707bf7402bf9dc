// clock history: past grants, releases (with how each run ended), expiries,
// forced releases, lost leases and the runs that did not happen.
#include "cmd/commands.hpp"
#include "store/history_since.hpp"

namespace clk::cmd {

Action register_history(CLI::App& app) {
  struct Options {
    std::optional<std::string> prefix;
    int limit = 50;
    std::string format = "table";
    std::optional<std::string> event;
    std::optional<std::string> since;
    std::optional<std::string> host;
  };
  auto options = std::make_shared<Options>();
  auto* command = app.add_subcommand("history", "Show past grants and releases, newest first");
  command->add_option("prefix", options->prefix, "Only this resource and those below it");
  command->add_option("--limit", options->limit, "At most N events (default 50)")
      ->check(CLI::Range(1, 1'000'000));
  command->add_option("--format", options->format, "table or json");
  std::vector<std::string> kinds;
  for (auto kind : store::k_event_kinds)
    kinds.emplace_back(store::to_string(kind));
  command
      ->add_option("--event", options->event,
                   "Only events of this kind: acquired, released, expired, forced, lost, a run "
                   "that did not happen: skipped, timed_out, killed, or a renew, release or "
                   "re-entry refused for want of the owner's secret: refused")
      ->check(CLI::IsMember(kinds));
  command->add_option("--since", options->since,
                      "Only events since D ago (90m, 2d; on the database's clock) or since a UTC "
                      "time (2026-11-26T03:00Z)");
  command->add_option("--host", options->host, "Only events of host H (the holder or requester)");
  command->footer(
      "JSON Schema of --format json: /usr/share/doc/clock/schema/history.schema.json (package), "
      "packaging/schema/history.schema.json (source tree)\n"
      "Examples:\n  clock history bootstrap --limit 20\n"
      "  clock history --event skipped   # cron runs refused because the job was busy\n"
      "  clock history --since 1d --host web1   # how last night's runs on web1 ended");
  return [options](Context& context) {
    auto format = format_flag(options->format, {output::Format::table, output::Format::json});
    store::HistoryQuery query;
    if (context.settings.ns_given)
      query.ns = context.settings.ns;
    if (options->prefix)
      query.prefix = lock::Resource::parse(*options->prefix);
    query.limit = options->limit;
    if (options->event)
      query.event = store::event_kind_of(*options->event);
    if (options->since && !store::set_history_since(query, *options->since)) {
      throw Error(ExitCode::usage, "--since " + *options->since + ": expected " +
                                       std::string(store::k_history_since_forms));
    }
    query.host = options->host;
    print(output::render_history(context.open_store()->history(query), format));
    return 0;
  };
}

}  // namespace clk::cmd
