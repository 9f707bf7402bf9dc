#include "util/sha256.hpp"

#include <array>
#include <openssl/evp.h>

#include "error.hpp"

namespace clk::util {

std::string sha256_hex(std::string_view text) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_Digest(text.data(), text.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1)
    throw Error(ExitCode::internal, "SHA-256 failed in libcrypto");
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += k_hex[digest[i] >> 4];
    out += k_hex[digest[i] & 0x0f];
  }
  return out;
}

}  // namespace clk::util
