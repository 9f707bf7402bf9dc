#include "util/sha256.hpp"

#include <array>
#include <sodium/crypto_hash_sha256.h>

namespace clk::util {

// libsodium's SHA-256, a library that costs a process nothing until it is
// called: OpenSSL's EVP initialises libcrypto on first use (1.5-2 ms per
// SQLite `clock run`), and libnettle's constructor probes the CPU with
// `cpuid` in every process (on a virtual machine each one exits to the
// hypervisor: 0.12-0.14 ms of CPU per run, docs/performance.md).
// sodium_init() is not called: it is optional, and what it does (choose the
// fastest implementations, which runs `cpuid` too, and set up the random
// generator) does not concern SHA-256, which has one portable implementation
// and no state.
std::string sha256_hex(std::string_view text) {
  std::array<unsigned char, crypto_hash_sha256_BYTES> digest{};
  crypto_hash_sha256(digest.data(), reinterpret_cast<const unsigned char*>(text.data()),
                     text.size());
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * digest.size());
  for (unsigned char byte : digest) {
    out += k_hex[byte >> 4];
    out += k_hex[byte & 0x0f];
  }
  return out;
}

}  // namespace clk::util
