// One registration function per subcommand (one file each): it adds the
// subcommand and its flags to the app and returns the action to run.
#pragma once

#include "cmd/context.hpp"

namespace clk::cmd {

Action register_acquire(CLI::App& app);
Action register_release(CLI::App& app);
Action register_renew(CLI::App& app);
Action register_status(CLI::App& app);
Action register_history(CLI::App& app);
Action register_run(CLI::App& app);
Action register_gc(CLI::App& app);
Action register_init(CLI::App& app);
Action register_config(CLI::App& app);
Action register_check(CLI::App& app);
Action register_missed(CLI::App& app);
Action register_serve(CLI::App& app);

}  // namespace clk::cmd
