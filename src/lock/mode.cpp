// Mode names as they appear in SQL rows, JSON and tables.
#include "lock/mode.hpp"

namespace clk::lock {

std::string_view to_string(Mode mode) {
  return mode == Mode::shared ? "shared" : "exclusive";
}

std::optional<Mode> parse_mode(std::string_view text) {
  if (text == "exclusive")
    return Mode::exclusive;
  if (text == "shared")
    return Mode::shared;
  return std::nullopt;
}

}  // namespace clk::lock
