// clock gc: delete expired leases, dead waiters and old history in batches.
#include "cmd/commands.hpp"

namespace clk::cmd {

Action register_gc(CLI::App& app) {
  struct Options {
    bool dry_run = false;
    std::optional<std::string> history_older_than;
  };
  auto options = std::make_shared<Options>();
  auto* command = app.add_subcommand("gc", "Delete expired leases, dead waiters, old history");
  command->add_flag("--dry-run", options->dry_run, "Only count what would be removed");
  command->add_option("--history-older-than", options->history_older_than,
                      "Also prune history older than D (default: gc.history_retention)");
  command->footer("Example (cron):\n  */10 * * * * clock gc --history-older-than 30d");
  return [options](Context& context) {
    store::GcOptions gc;
    gc.dry_run = options->dry_run;
    gc.batch_size = context.settings.gc_batch_size;
    gc.history_older_than = context.settings.history_retention;
    if (options->history_older_than) {
      gc.history_older_than = duration_flag("--history-older-than", *options->history_older_than);
    }
    print(output::render_gc(context.open_store()->gc(gc), gc.dry_run));
    return 0;
  };
}

}  // namespace clk::cmd
