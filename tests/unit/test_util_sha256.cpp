// util::sha256_hex: the hash an owner's secret is kept as on SQLite, which
// must equal PostgreSQL's encode(sha256(convert_to(s, 'UTF8')), 'hex').
#include <doctest/doctest.h>

#include "util/process_facts.hpp"
#include "util/sha256.hpp"

using clk::util::sha256_hex;

TEST_CASE("sha256_hex gives the FIPS 180-2 test vectors in lower-case hex") {
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST_CASE("an owner secret is 32 hex digits, and no two are alike") {
  auto one = clk::util::random_secret();
  auto two = clk::util::random_secret();
  CHECK(one.size() == 32);
  CHECK(one.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(one != two);
}
