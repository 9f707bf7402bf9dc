// clock config: the effective settings, each with where it came from (flag,
// environment, which config file, default), as git config --show-origin.
#include "cmd/commands.hpp"
#include "config/settings.hpp"
#include "config/shown_settings.hpp"
#include "config/starter_file.hpp"
#include "config/user_config_file.hpp"
#include "output/settings_render.hpp"

namespace clk::cmd {

Action register_config(CLI::App& app) {
  struct Options {
    std::string format = "table";
    std::string init_file;
  };
  auto options = std::make_shared<Options>();
  auto* command = app.add_subcommand(
      "config", "Show the effective settings and where each came from; opens no database");
  command->add_option("--format", options->format, "table or json");
  auto* init = command
                   ->add_option("--init", options->init_file,
                                "Write a commented starter config file to FILE (default: "
                                "~/.config/clock/clock.toml) instead, with the database of "
                                "--database or $CLOCK_DATABASE_URL; mode 0600 if its URL holds a "
                                "password, else 0644; a file that sets any key is refused (78), "
                                "one of comments and table headers only is replaced")
                   ->expected(0, 1);
  command->footer(
      "ORIGIN is a flag (--database flag), a variable (CLOCK_DATABASE_URL), a config file\n"
      "and its key (config file /etc/clock/clock.toml (key database)), or default.\n"
      "Passwords are masked; of CLOCK_OWNER only the owner id is shown.\n"
      "Examples:\n"
      "  clock config\n"
      "  clock --database postgresql://clock_host@db.example/clock config --init "
      "/etc/clock/clock.toml\n"
      "  clock config --format json | jq -r '.[] | select(.key == \"database\") | .origin'");
  return [options, init](Context& context) {
    if (init->count() > 0) {
      auto file = options->init_file.empty()
                      ? config::user_config_file(config::process_environment())
                      : std::filesystem::path(options->init_file);
      // The database named for this run, not one read from a config file.
      auto origin = config::origin_of(context.settings, "database");
      std::optional<std::string> database;
      if (origin == "--database flag" || origin == "CLOCK_DATABASE_URL")
        database = context.settings.database_url;
      print(config::write_starter_file(file, database) + "\n");
      return 0;
    }
    auto format = format_flag(options->format, {output::Format::table, output::Format::json});
    print(output::render_settings(config::shown_settings(context.settings), format));
    return 0;
  };
}

}  // namespace clk::cmd
