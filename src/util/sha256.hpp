// SHA-256 (libsodium's): the hash an owner's secret is kept as.
#pragma once

#include <string>
#include <string_view>

namespace clk::util {

// The SHA-256 of `text`'s bytes as 64 lower-case hex digits: the same value
// as PostgreSQL's encode(sha256(convert_to(text, 'UTF8')), 'hex').
std::string sha256_hex(std::string_view text);

}  // namespace clk::util
