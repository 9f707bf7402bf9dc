// Where owner secrets sit in command lines, so that none is ever shown:
// masked in stored command lines, blanked in our own argv (man clock, DESCRIPTION: the
// secret is never printed, logged or stored readably).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/password.hpp"

namespace clk::util {

// The secrets of ID.SECRET tokens in `text`, in order: the run of hex digits
// after "UUID." when it is 32 digits or longer (an owner id, a dot, and an
// owner's secret, as CLOCK_OWNER carries them), wherever it occurs. The id
// itself is public and left out.
std::vector<Span> owner_secret_spans(std::string_view text);

// `text` with each owner secret replaced by "****", as mask_passwords does,
// so that "ID.SECRET" shows as "ID.****".
std::string mask_owner_secrets(std::string_view text);

}  // namespace clk::util
