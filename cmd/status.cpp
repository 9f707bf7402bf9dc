// clock status: who holds what, since when, from where, and who waits. The
// exit status answers "is anything held?" for scripts: 0 yes, 1 no.
#include <spdlog/spdlog.h>

#include "cmd/commands.hpp"
#include "output/colour.hpp"
#include "store/database_url.hpp"

namespace clk::cmd {

namespace {

// Exit status of a successful `clock status` that found no live lease.
constexpr int k_nothing_held = 1;

bool anything_held(const store::Snapshot& snapshot) {
  for (std::size_t i = 0; i < snapshot.holders.size(); ++i) {
    if (i >= snapshot.holder_expired.size() || !snapshot.holder_expired[i])
      return true;
  }
  return false;
}

}  // namespace

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
  command->footer(
      "The table starts with the database it read (password masked), then has one line\n"
      "per holder and per waiter (in queue order); its STATE\n"
      "column is coloured on a terminal, never with NO_COLOR set or in a pipe. Then, for\n"
      "resources with an expected period (clock run --once-per/--every), the last\n"
      "success, when the next is due and whether it is OVERDUE (see clock missed).\n"
      "Exit status: 0 if a live lease is held (on PREFIX or below, if given), 1 if\n"
      "none is (even with waiters queued); --format prometheus exits 0 either way.\n"
      "Errors exit 64-79 as for every command (see clock --help).\n"
      "JSON Schema of --format json: /usr/share/doc/clock/schema/status.schema.json (package), "
      "packaging/schema/status.schema.json (source tree)\n"
      "Examples:\n"
      "  clock status ldap\n"
      "  clock status --format json | jq .holders\n"
      "  if clock status bootstrap >/dev/null; then echo 'bootstrap is running'; fi");
  return [options](Context& context) {
    auto format = format_flag(
        options->format, {output::Format::table, output::Format::json, output::Format::prometheus});
    store::StatusQuery query;
    if (context.settings.ns_given)
      query.ns = context.settings.ns;
    if (options->prefix)
      query.prefix = lock::Resource::parse(*options->prefix);
    query.include_expired = options->all;
    auto store = context.open_store();
    auto snapshot = store->status(query);
    // Resources with an expected period: last success, due, overdue.
    snapshot.expected = store->expected_runs({query.ns, query.prefix, std::nullopt});
    if (context.verbosity > 0) {
      for (const auto& warning : store->setup_warnings())
        spdlog::warn("{}", warning);
    }
    bool colour = format == output::Format::table && output::colour_wanted_for_stdout();
    // A table names the database it read: a status of the wrong database
    // (another HOME, another config file) looks like "nothing held" otherwise.
    std::string header =
        format == output::Format::table
            ? "database: " + store::mask_password(context.settings.database_url) + "\n"
            : "";
    print(header + output::render_status(snapshot, format, colour));
    // A metrics export succeeds whether or not anything is held: a cron line
    // `clock status --format prometheus > f.tmp && mv f.tmp f` must not stall.
    if (format == output::Format::prometheus || anything_held(snapshot))
      return 0;
    return k_nothing_held;
  };
}

}  // namespace clk::cmd
