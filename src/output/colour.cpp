// The colour decision, kept apart from the renderers so it can be tested alone.
#include "output/colour.hpp"

#include <cstdlib>
#include <unistd.h>

namespace clk::output {

bool colour_wanted(bool stream_is_terminal, const char* no_color, const char* term) {
  if (!stream_is_terminal)
    return false;
  // no-color.org: set and non-empty disables colour, whatever its value.
  if (no_color != nullptr && *no_color != '\0')
    return false;
  return term != nullptr && *term != '\0' && std::string_view(term) != "dumb";
}

bool colour_wanted_for_stdout() {
  return colour_wanted(isatty(STDOUT_FILENO) == 1, std::getenv("NO_COLOR"), std::getenv("TERM"));
}

}  // namespace clk::output
