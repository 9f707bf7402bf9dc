// Owner secret masking (util/owner_secret): the secret of an ID.SECRET token
// never shows in a stored command line; the public id does.
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "util/owner_secret.hpp"
#include "util/password.hpp"

using clk::util::mask_owner_secrets;
using clk::util::owner_secret_spans;

namespace {

const std::string k_id = "0f3b8c1e-9a4d-4e1f-8b7a-2c5d6e7f8a9b";
const std::string k_secret = "00112233445566778899aabbccddeeff";

}  // namespace

TEST_SUITE("util::owner_secret") {
  TEST_CASE("the secret of ID.SECRET is masked and the id kept") {
    CHECK(mask_owner_secrets(k_id + "." + k_secret) == k_id + ".****");
    CHECK(mask_owner_secrets("step.sh " + k_id + "." + k_secret + " --fast") ==
          "step.sh " + k_id + ".**** --fast");
    CHECK(mask_owner_secrets("CLOCK_OWNER=" + k_id + "." + k_secret) ==
          "CLOCK_OWNER=" + k_id + ".****");
    CHECK(mask_owner_secrets("'--owner=" + k_id + "." + k_secret + "'") ==
          "'--owner=" + k_id + ".****'");
  }

  TEST_CASE("any case and any length from 32 hex digits up are masked, up to the last digit") {
    std::string upper = "0F3B8C1E-9A4D-4E1F-8B7A-2C5D6E7F8A9B.00112233445566778899AABBCCDDEEFF";
    CHECK(mask_owner_secrets(upper) == upper.substr(0, 37) + "****");
    std::string long_secret(200, 'a');
    CHECK(mask_owner_secrets(k_id + "." + long_secret + "xyz") == k_id + ".****xyz");
    CHECK(mask_owner_secrets(k_id + "." + k_secret + "/file") == k_id + ".****/file");
  }

  TEST_CASE("every secret in a line is masked") {
    std::string line = k_id + "." + k_secret + " " + k_id + "." + k_secret + k_secret;
    CHECK(mask_owner_secrets(line) == k_id + ".**** " + k_id + ".****");
    CHECK(owner_secret_spans(line).size() == 2);
  }

  TEST_CASE("what is not an ID.SECRET token is left alone") {
    for (const std::string& text : std::vector<std::string>{
             k_id,                                   // the public id alone
             k_id + "." + k_secret.substr(0, 31),    // too short to be a secret
             k_id + ".json",                         // a file named by the id
             "0f3b8c1e-9a4d-4e1f-8b7a." + k_secret,  // not a whole UUID
             "0f3b8c1e_9a4d_4e1f_8b7a_2c5d6e7f8a9b." + k_secret,
             "plain words",
             "",
         }) {
      CAPTURE(text);
      CHECK(mask_owner_secrets(text) == text);
      CHECK(owner_secret_spans(text).empty());
    }
  }

  TEST_CASE("masking owner secrets and passwords is idempotent, in either order") {
    using clk::util::mask_passwords;
    std::string text = "psql postgresql://u:pw@db/x " + k_id + "." + k_secret;
    std::string once = mask_owner_secrets(mask_passwords(text));
    CHECK(once == "psql postgresql://u:****@db/x " + k_id + ".****");
    CHECK(mask_owner_secrets(mask_passwords(once)) == once);
    CHECK(mask_passwords(mask_owner_secrets(text)) == once);
  }
}
