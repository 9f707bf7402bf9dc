// Escaping of unprintable bytes, UTF-8 aware.
#include "util/shown_text.hpp"

#include <cstdio>

namespace clk::util {

namespace {

// The length of the valid UTF-8 sequence at the front of TEXT, and its code
// point; 0 when the first byte does not begin one (overlong forms, surrogates
// and code points past U+10FFFF are not valid).
std::size_t utf8_sequence(std::string_view text, char32_t& code_point) {
  auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(0);
  std::size_t length = 0;
  char32_t low = 0;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2, code_point = lead & 0x1f, low = 0x80;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3, code_point = lead & 0x0f, low = 0x800;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4, code_point = lead & 0x07, low = 0x10000;
  } else {
    return 0;
  }
  if (text.size() < length)
    return 0;
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xc0) != 0x80)
      return 0;
    code_point = (code_point << 6) | (byte(i) & 0x3f);
  }
  bool surrogate = code_point >= 0xd800 && code_point <= 0xdfff;
  if (code_point < low || surrogate || code_point > 0x10ffff)
    return 0;
  return length;
}

void append_escaped(std::string& out, unsigned char c) {
  char buffer[5];
  std::snprintf(buffer, sizeof buffer, "\\x%02x", c);
  out += buffer;
}

}  // namespace

std::string escape_unprintable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    auto c = static_cast<unsigned char>(text[0]);
    if (c == '\\') {
      out += "\\\\";
    } else if (c < 0x20 || c == 0x7f) {
      append_escaped(out, c);
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else {
      char32_t code_point = 0;
      std::size_t length = utf8_sequence(text, code_point);
      if (length == 0 || (code_point >= 0x80 && code_point <= 0x9f)) {
        for (std::size_t i = 0; i < (length ? length : 1); ++i)
          append_escaped(out, static_cast<unsigned char>(text[i]));
        text.remove_prefix(length ? length : 1);
        continue;
      }
      out.append(text.substr(0, length));
      text.remove_prefix(length);
      continue;
    }
    text.remove_prefix(1);
  }
  return out;
}

std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes)
    return text;
  std::size_t end = max_bytes;
  // A continuation byte just past the cut means a sequence straddles it:
  // the cut moves back to that sequence's lead byte.
  std::size_t lead = end;
  while (lead > 0 && (static_cast<unsigned char>(text[lead]) & 0xc0) == 0x80)
    --lead;
  return text.substr(0, lead);
}

}  // namespace clk::util
