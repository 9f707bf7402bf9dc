#include "lock/limits.hpp"

#include <string_view>

namespace clk::lock {

std::string bounded(std::string text, std::size_t max_bytes) {
  if (text.size() <= max_bytes)
    return text;
  static constexpr std::string_view k_ellipsis = "\u2026";
  std::size_t cut = max_bytes >= k_ellipsis.size() ? max_bytes - k_ellipsis.size() : max_bytes;
  // Back to the first byte of a character: continuation bytes are 10xxxxxx.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
    --cut;
  text.resize(cut);
  if (max_bytes >= k_ellipsis.size())
    text += k_ellipsis;
  return text;
}

}  // namespace clk::lock
