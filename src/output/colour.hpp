// Whether human output may use colour, and the few colours it uses. Colour is
// for a person at a terminal only: never in a pipe or a file, and never when
// the user asked for none (https://no-color.org).
#pragma once

#include <string_view>

namespace clk::output {

// True when `stream_is_terminal`, NO_COLOR is unset or empty, and TERM is set
// and not "dumb". `no_color` and `term` are the variables' values (null: unset).
bool colour_wanted(bool stream_is_terminal, const char* no_color, const char* term);

// colour_wanted() for stdout, from isatty(1) and the process environment.
bool colour_wanted_for_stdout();

// SGR parameters of the colours in use ("" means none).
inline constexpr std::string_view k_colour_held = "32";     // green
inline constexpr std::string_view k_colour_waiting = "33";  // yellow
inline constexpr std::string_view k_colour_expired = "31";  // red
inline constexpr std::string_view k_colour_header = "1";    // bold

}  // namespace clk::output
