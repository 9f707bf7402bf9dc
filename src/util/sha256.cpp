#include "util/sha256.hpp"

#include <array>
#include <nettle/sha2.h>

namespace clk::util {

// Nettle, not OpenSSL's EVP: EVP's first use initialises libcrypto (its
// configuration file and default provider), which measured 1.5-2 ms per
// SQLite `clock run`, some 40% of it; nettle's SHA-256 needs no set-up.
std::string sha256_hex(std::string_view text) {
  sha256_ctx context{};
  sha256_init(&context);
  sha256_update(&context, text.size(), reinterpret_cast<const std::uint8_t*>(text.data()));
  std::array<std::uint8_t, SHA256_DIGEST_SIZE> digest{};
  sha256_digest(&context, digest.size(), digest.data());
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out;
  for (std::uint8_t byte : digest) {
    out += k_hex[byte >> 4];
    out += k_hex[byte & 0x0f];
  }
  return out;
}

}  // namespace clk::util
