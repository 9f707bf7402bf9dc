// Durations as operators type them ("250ms", "90s", "5m", "2h", "1d", "30",
// "1h30m") and as they read them back ("4m12s").
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace clk::util {

// Parses a non-negative duration: a number with an optional unit (ms, s, m,
// h, d); a plain number means seconds. Parts join from the largest unit down
// ("1h30m", "2m30s", "1d12h"), so clock's own output ("4m12s") reads back.
// Returns nullopt for anything else, including overflow. Fractions ("1.5s")
// are accepted down to a millisecond, in the last part only.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

// Renders a duration compactly for humans: "250ms", "38s", "4m12s", "2h5m",
// "3d4h". Negative durations get a leading '-'.
std::string format_duration(std::chrono::milliseconds duration);

}  // namespace clk::util
