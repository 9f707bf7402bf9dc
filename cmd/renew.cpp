// clock renew: extend a held lease by another TTL.
#include "cmd/commands.hpp"
#include "util/duration.hpp"

namespace clk::cmd {

Action register_renew(CLI::App& app) {
  struct Options {
    std::vector<std::string> resources;
    std::optional<std::string> owner;
    std::optional<std::string> ttl;
  };
  auto options = std::make_shared<Options>();
  auto* command = app.add_subcommand("renew", "Extend a held lease (exit 77 if it was lost)");
  command
      ->add_option("-r,--resource", options->resources,
                   "Resource to renew (repeatable, up to " +
                       std::to_string(lock::k_max_resources_per_call) + ")")
      ->required()
      ->take_all();
  command->add_option("--owner", options->owner,
                      "Owner ID (default: $CLOCK_OWNER); its secret comes from "
                      "CLOCK_OWNER=ID.SECRET, the preferred form (exit 77 without it). "
                      "--owner ID.SECRET works too, but shows in ps until clock blanks it");
  command->add_option("--ttl", options->ttl,
                      "New time-to-live from now, at most " +
                          util::format_duration(lock::k_max_ttl) + " (default: lock.ttl, 90s)");
  command->footer("Example:\n  clock renew -r ldap.import --ttl 10m");
  return [options](Context& context) {
    config::apply_owner_flag(context.settings, options->owner);
    store::RenewRequest request;
    request.ns = context.settings.ns;
    request.resources = lock::canonical_resources(options->resources);
    auto owner = context.required_owner("renew");
    request.owner = owner.id;
    request.secret = owner.secret;
    request.caller = this_caller();
    request.ttl = lease_ttl(context, options->ttl);
    context.open_store()->renew(request);
    return 0;
  };
}

}  // namespace clk::cmd
