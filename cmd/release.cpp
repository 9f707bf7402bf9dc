// clock release: give back lock(s) held by an owner, or any holder's with --force.
#include <spdlog/spdlog.h>

#include "cmd/commands.hpp"
#include "util/process_facts.hpp"

namespace clk::cmd {

Action register_release(CLI::App& app) {
  struct Options {
    std::vector<std::string> resources;
    std::optional<std::string> owner;
    bool force = false;
  };
  auto options = std::make_shared<Options>();
  auto* command = app.add_subcommand("release", "Release lock(s) held by the owner");
  command->add_option("-r,--resource", options->resources, "Resource to release (repeatable)")
      ->required()
      ->take_all();
  command->add_option("--owner", options->owner, "Owner id (default: $CLOCK_OWNER)");
  command->add_flag("--force", options->force,
                    "Release whoever holds it (recorded in history as forced)");
  command->footer(
      "Example:\n  clock release -r ldap.import --owner 3f2b8c1e-9a4d-4e1f-8b7a-2c5d6e7f8a9b");
  return [options](Context& context) {
    config::apply_owner_flag(context.settings, options->owner);
    store::ReleaseRequest request;
    request.ns = context.settings.ns;
    request.resources = lock::canonical_resources(options->resources);
    request.force = options->force;
    if (options->force) {
      request.forced_by = util::user_name() + "@" + util::host_name();
      if (context.settings.owner)
        request.owner = lock::OwnerId::parse(*context.settings.owner);
    } else {
      request.owner = context.required_owner("release");
    }
    auto released = context.open_store()->release(request);
    for (const auto& item : released) {
      if (item.remaining_depth > 0) {
        spdlog::info("{} is still held: re-entered, depth now {}", item.resource.str(),
                     item.remaining_depth);
      } else if (options->force) {
        spdlog::warn("forced release of {}: removed {} holder(s)", item.resource.str(),
                     item.holders_removed);
      }
    }
    return 0;
  };
}

}  // namespace clk::cmd
