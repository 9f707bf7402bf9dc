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
  command
      ->add_option("-r,--resource", options->resources,
                   "Resource to release (repeatable, up to " +
                       std::to_string(lock::k_max_resources_per_call) + ")")
      ->required()
      ->take_all();
  command->add_option("--owner", options->owner,
                      "Owner ID (default: $CLOCK_OWNER); its secret comes from "
                      "CLOCK_OWNER=ID.SECRET, the preferred form (exit 77 without it). "
                      "--owner ID.SECRET works too, but shows in ps until clock blanks it");
  command->add_flag("--force", options->force,
                    "Release whoever holds it (recorded in history as forced; prints a "
                    "warning line on stderr; exit 77 if nobody held it)");
  command->footer(
      "Example:\n  exports=$(clock acquire -r ldap.import --format shell) || exit\n"
      "  eval \"$exports\"\n"
      "  ./import.sh; clock release -r ldap.import   # CLOCK_OWNER=ID.SECRET proves the owner\n"
      "A release from outside the holder's process tree is recorded with who asked.");
  return [options](Context& context) {
    config::apply_owner_flag(context.settings, options->owner);
    store::ReleaseRequest request;
    request.ns = context.settings.ns;
    request.resources = lock::canonical_resources(options->resources);
    request.force = options->force;
    request.caller = this_caller();
    if (options->force) {
      if (context.settings.owner)
        request.owner = lock::OwnerCredential::parse(*context.settings.owner).id;
    } else {
      auto owner = context.required_owner("release");
      request.owner = owner.id;
      request.secret = owner.secret;
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
