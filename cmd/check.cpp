// clock check: is this host set up to run jobs? One line per check, exit 0
// when all pass (for READMEs, Ansible and Puppet; clock status's exit 1 means
// "nothing held", not "broken").
#include "cmd/commands.hpp"
#include "error.hpp"
#include "store/database_url.hpp"
#include "store/setup_check.hpp"

namespace clk::cmd {

Action register_check(CLI::App& app) {
  auto* command = app.add_subcommand(
      "check", "Check the set-up: database reached, schema current, privileges for clock run");
  command->footer(
      "Prints one line per check, 'ok' or 'FAIL' with what to do, and exits 0 when\n"
      "all pass, 69 when the database cannot be reached, 78 for a configuration,\n"
      "schema or privilege problem, 74 for a local SQLite file or folder this user\n"
      "cannot use. Creates the schema where any command would; takes no lock.\n"
      "Example (Ansible): command: clock check  (changed_when: false)");
  return [](Context& context) {
    std::string out = "ok    database " + store::mask_password(context.settings.database_url) +
                      ", from " + config::origin_of(context.settings, "database") + "\n";
    auto report = store::check_setup(context.store_options());
    for (const auto& line : report.lines) {
      out +=
          line.ok ? "ok    " + line.what + "\n" : "FAIL  " + line.what + ": " + line.detail + "\n";
    }
    print(out);
    return exit_status(report.code);
  };
}

}  // namespace clk::cmd
