// spdlog on stderr, as text ("clock: warning: …") or one JSON object per line.
#pragma once

#include <string>

#include "config/settings.hpp"

namespace clk::output {

void setup_logging(const std::string& level, config::LogFormat format);

}  // namespace clk::output
