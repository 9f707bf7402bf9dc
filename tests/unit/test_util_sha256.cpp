// util::sha256_hex: the hash an owner's secret is kept as on SQLite, which
// must equal PostgreSQL's encode(sha256(convert_to(s, 'UTF8')), 'hex').
#include <string>

#include <doctest/doctest.h>

#include "util/process_facts.hpp"
#include "util/sha256.hpp"

using clk::util::sha256_hex;

TEST_CASE("sha256_hex gives the FIPS 180-2 test vectors in lower-case hex") {
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // 56 bytes: the length no longer fits the last block, the padding takes a second.
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // Many whole blocks, and a partial one.
  CHECK(sha256_hex(std::string(1'000'000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("sha256_hex pads each length around a block's end") {
  // Lengths 55, 56, 63, 64 and 65: one block of padding, two, and a whole
  // block of text before it (values from Python's hashlib).
  CHECK(sha256_hex(std::string(55, 'x')) ==
        "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072");
  CHECK(sha256_hex(std::string(56, 'x')) ==
        "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e");
  CHECK(sha256_hex(std::string(63, 'x')) ==
        "75220b47218278e656f2013bb8f0c455a25eaf01e86c64924e9d48d89776d6f2");
  CHECK(sha256_hex(std::string(64, 'x')) ==
        "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c");
  CHECK(sha256_hex(std::string(65, 'x')) ==
        "9537c5fdf120482f7d58d25e9ed583f52c02b4e304ea814db1633ad565aed7e9");
}

TEST_CASE("an owner secret is 32 hex digits, and no two are alike") {
  auto one = clk::util::random_secret();
  auto two = clk::util::random_secret();
  CHECK(one.size() == 32);
  CHECK(one.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(one != two);
}
