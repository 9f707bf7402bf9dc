// lock::OwnerCredential: what --owner and CLOCK_OWNER carry, ID or ID.SECRET.
#include <doctest/doctest.h>

#include "error.hpp"
#include "lock/owner.hpp"

using clk::Error;
using clk::ExitCode;
using clk::lock::OwnerCredential;

namespace {

const char* const k_id = "3f2b8c1e-9a4d-4e1f-8b7a-2c5d6e7f8a9b";

ExitCode code_of(const char* text) {
  try {
    OwnerCredential::parse(text);
  } catch (const Error& error) {
    return error.code();
  }
  return ExitCode::ok;
}

}  // namespace

TEST_CASE("an owner credential is an id, optionally with a secret of 32 to 128 hex digits") {
  auto bare = OwnerCredential::parse(k_id);
  CHECK(bare.id.str() == k_id);
  CHECK(bare.secret.empty());
  CHECK(bare.str() == k_id);

  auto full = OwnerCredential::parse(std::string(k_id) + ".0123456789ABCDEF0123456789abcdef");
  CHECK(full.id.str() == k_id);
  CHECK(full.secret == "0123456789abcdef0123456789abcdef");
  CHECK(full.str() == std::string(k_id) + ".0123456789abcdef0123456789abcdef");
}

TEST_CASE("a short, long or non-hex secret is a usage error that does not repeat it") {
  for (const std::string& secret :
       {std::string(""), std::string(31, 'a'), std::string(129, 'a'), std::string(32, 'g')}) {
    std::string text = std::string(k_id) + "." + secret;
    CHECK(code_of(text.c_str()) == ExitCode::usage);
  }
  try {
    OwnerCredential::parse(std::string(k_id) + ".zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz");
  } catch (const Error& error) {
    CHECK(std::string(error.what()).find("zzzz") == std::string::npos);
  }
  CHECK(code_of("not-an-id.0123456789abcdef0123456789abcdef") == ExitCode::usage);
}
