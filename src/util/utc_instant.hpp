// Instants that people type: "2026-11-26", "2026-11-26T03:00",
// "2026-11-26T03:00:00Z" (UTC; a trailing Z is optional, no other zone).
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace clk::util {

// None for any other text.
std::optional<std::chrono::system_clock::time_point> parse_utc_instant(std::string_view text);

}  // namespace clk::util
