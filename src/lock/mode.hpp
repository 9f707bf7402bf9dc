// Lock modes and the compatibility rule of man clock, DESCRIPTION.
#pragma once

#include <optional>
#include <string_view>

namespace clk::lock {

enum class Mode { exclusive, shared };

std::string_view to_string(Mode mode);
std::optional<Mode> parse_mode(std::string_view text);

}  // namespace clk::lock
