// A hand-written scanner, as for passwords: it runs on every stored command
// line and on clock's own argv before anything else.
#include "util/owner_secret.hpp"

namespace clk::util {

namespace {

constexpr std::size_t k_uuid_size = 36;
constexpr std::size_t k_min_secret = 32;

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// 8-4-4-4-12 hex digits, either case, at `text`'s start.
bool is_uuid_at(std::string_view text, std::size_t at) {
  if (text.size() - at < k_uuid_size)
    return false;
  for (std::size_t i = 0; i < k_uuid_size; ++i) {
    char c = text[at + i];
    bool dash_here = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash_here ? c != '-' : !is_hex(c))
      return false;
  }
  return true;
}

}  // namespace

std::vector<Span> owner_secret_spans(std::string_view text) {
  std::vector<Span> spans;
  // Every '.' that follows a UUID: a secret starts right after it.
  for (std::size_t dot = text.find('.', k_uuid_size); dot != std::string_view::npos;
       dot = text.find('.', dot + 1)) {
    if (!is_uuid_at(text, dot - k_uuid_size))
      continue;
    std::size_t end = dot + 1;
    while (end < text.size() && is_hex(text[end]))
      ++end;
    // Longer than the 128 digits clock accepts is still masked: the safe side.
    if (end - (dot + 1) >= k_min_secret)
      spans.push_back({dot + 1, end});
  }
  return spans;
}

std::string mask_owner_secrets(std::string_view text) {
  return mask_spans(text, owner_secret_spans(text));
}

}  // namespace clk::util
