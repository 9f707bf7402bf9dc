// clock acquire: take the lock(s) and return, printing owner and token(s).
#include <spdlog/spdlog.h>

#include "cmd/commands.hpp"
#include "cmd/lock_flags.hpp"
#include "error.hpp"

namespace clk::cmd {

Action register_acquire(CLI::App& app) {
  struct Options {
    LockFlags lock;
    std::string format = "text";
  };
  auto options = std::make_shared<Options>();
  auto* command = app.add_subcommand("acquire", "Take lock(s) and return; prints owner and token");
  add_lock_flags(*command, options->lock);
  command->add_option("--format", options->format, "text, json or shell (for eval)");
  command->footer(
      "Example:\n"
      "  exports=$(clock acquire -r ldap.import --ttl 10m --format shell) || exit\n"
      "  eval \"$exports\"\n"
      "  ./import.sh; clock release -r ldap.import");
  return [options](Context& context) {
    auto format = format_flag(options->format,
                              {output::Format::text, output::Format::json, output::Format::shell});
    auto plan = plan_lock(context, options->lock, owner_info_for_caller());
    auto store = context.open_store();
    try {
      auto acquired = take_locks(context, *store, plan);
      print(output::render_grants(plan.owner, acquired.grants, format));
      return 0;
    } catch (const Error& error) {
      if (error.code() != ExitCode::not_acquired)
        throw;
      return report_refusal(context, options->lock, error);
    }
  };
}

}  // namespace clk::cmd
