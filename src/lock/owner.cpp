// Owner id validation.
#include "lock/owner.hpp"

#include "error.hpp"

namespace clk::lock {

OwnerId OwnerId::parse(std::string_view text) {
  static constexpr std::size_t k_dashes[] = {8, 13, 18, 23};
  bool valid = text.size() == 36;
  std::string normal;
  for (std::size_t i = 0; valid && i < text.size(); ++i) {
    char c = text[i];
    bool dash_here = i == k_dashes[0] || i == k_dashes[1] || i == k_dashes[2] || i == k_dashes[3];
    if (dash_here) {
      valid = c == '-';
    } else if (c >= 'A' && c <= 'F') {
      c = static_cast<char>(c - 'A' + 'a');
    } else {
      valid = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    }
    normal += c;
  }
  if (!valid) {
    throw Error(ExitCode::usage,
                "invalid owner id: expected a UUID like 3f2b8c1e-9a4d-4e1f-8b7a-2c5d6e7f8a9b "
                "(as printed by 'clock acquire'), check --owner or CLOCK_OWNER");
  }
  return OwnerId(std::move(normal));
}

}  // namespace clk::lock
