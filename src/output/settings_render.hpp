// `clock config`: the effective settings and where each came from.
#pragma once

#include <string>
#include <vector>

#include "config/shown_settings.hpp"
#include "output/render.hpp"

namespace clk::output {

// A KEY VALUE ORIGIN table, or a JSON array of {key, value, origin} objects.
std::string render_settings(const std::vector<config::ShownSetting>& settings, Format format);

}  // namespace clk::output
