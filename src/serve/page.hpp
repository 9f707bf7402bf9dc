// The one HTML page of `clock serve`: self-contained (inline CSS and
// script, no external request), with the view's data embedded so that it
// draws at once; the script refreshes it from /status.json and
// /timeline.json every refresh period.
#pragma once

#include <chrono>
#include <string>

#include "serve/snapshots.hpp"

namespace clk::serve {

std::string render_page(const View& view, std::chrono::milliseconds refresh);

// JSON text made safe inside an HTML <script> element: every '<', '>' and
// '&' written as a \u escape, so stored text cannot close the element.
std::string json_for_script(const std::string& json);

}  // namespace clk::serve
