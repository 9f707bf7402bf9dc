// Where a user's own config file is: the first place clock looks after
// --config and CLOCK_CONFIG, and where `clock config --init` writes by default.
#pragma once

#include <filesystem>

#include "config/settings.hpp"

namespace clk::config {

// ${XDG_CONFIG_HOME:-~/.config}/clock/clock.toml (a relative XDG_CONFIG_HOME
// is ignored, as the XDG spec says).
std::filesystem::path user_config_file(const Environment& env);

}  // namespace clk::config
