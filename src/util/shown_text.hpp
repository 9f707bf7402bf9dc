// Text typed by someone (a resource name, a command line, a host name) shown
// back to people as typed, without letting it drive their terminal.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace clk::util {

// Keeps printable text, UTF-8 included ("ümlaut" stays "ümlaut"), and writes
// everything else as \xNN per byte: C0 controls, DEL, C1 controls (U+0080 to
// U+009F, which some terminals obey as escapes) and bytes that are not valid
// UTF-8. A backslash becomes \\, so an escape shown cannot be confused with
// one typed.
std::string escape_unprintable(std::string_view text);

// The longest prefix of TEXT of at most MAX_BYTES that does not cut a UTF-8
// sequence in two (a shortened name still shows its last letter whole).
std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes);

}  // namespace clk::util
