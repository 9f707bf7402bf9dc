// Owner ids: whatever parses is a lower-case 8-4-4-4-12 hex UUID, equal to
// the input up to case, and parses again to itself; anything else is a usage
// error.
#include <cctype>
#include <optional>
#include <string>

#include "error.hpp"
#include "fuzz_check.hpp"
#include "lock/owner.hpp"

using clk::lock::OwnerId;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto text = clk::fuzz::as_text(data, size);
  std::optional<OwnerId> parsed;
  try {
    parsed = OwnerId::parse(text);
  } catch (const clk::Error& error) {
    FUZZ_CHECK(error.code() == clk::ExitCode::usage);
    return 0;
  }
  const std::string& id = parsed->str();
  FUZZ_CHECK(id.size() == 36 && text.size() == 36);
  for (std::size_t i = 0; i < id.size(); ++i) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    char c = id[i];
    FUZZ_CHECK(dash ? c == '-' : ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')));
    FUZZ_CHECK(std::tolower(static_cast<unsigned char>(text[i])) == c);
  }
  FUZZ_CHECK(OwnerId::parse(id) == *parsed);
  std::string upper = id;
  for (char& c : upper)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  FUZZ_CHECK(OwnerId::parse(upper) == *parsed);
  return 0;
}
