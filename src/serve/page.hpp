// The one HTML page of `clock serve`: self-contained (inline CSS and
// script, no external request); its script draws it from /status.json and
// /timeline.json, and again every refresh period.
#pragma once

#include <chrono>
#include <string>

namespace clk::serve {

std::string render_page(std::chrono::milliseconds refresh);

}  // namespace clk::serve
