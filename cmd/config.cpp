// clock config: the effective settings, each with where it came from (flag,
// environment, which config file, default), as git config --show-origin.
#include "cmd/commands.hpp"
#include "config/shown_settings.hpp"
#include "output/settings_render.hpp"

namespace clk::cmd {

Action register_config(CLI::App& app) {
  struct Options {
    std::string format = "table";
  };
  auto options = std::make_shared<Options>();
  auto* command = app.add_subcommand(
      "config", "Show the effective settings and where each came from; opens no database");
  command->add_option("--format", options->format, "table or json");
  command->footer(
      "ORIGIN is a flag (--database flag), a variable (CLOCK_DATABASE_URL), a config file\n"
      "and its key (config file /etc/clock/clock.toml (key database)), or default.\n"
      "Passwords are masked; of CLOCK_OWNER only the owner id is shown.\n"
      "Examples:\n"
      "  clock config\n"
      "  clock config --format json | jq -r '.[] | select(.key == \"database\") | .origin'");
  return [options](Context& context) {
    auto format = format_flag(options->format, {output::Format::table, output::Format::json});
    print(output::render_settings(config::shown_settings(context.settings), format));
    return 0;
  };
}

}  // namespace clk::cmd
