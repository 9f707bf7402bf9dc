// Durations ("250ms", "90s", "5m", "2h", "1d", plain seconds, fractions): a
// parsed value is non-negative and bounded, and its rendering in milliseconds
// and in seconds parses back to the same value.
#include <chrono>
#include <string>

#include "fuzz_check.hpp"
#include "util/duration.hpp"

using clk::util::format_duration;
using clk::util::parse_duration;
using std::chrono::milliseconds;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto text = clk::fuzz::as_text(data, size);
  auto parsed = parse_duration(text);
  // A plain number ("90", "1.5") means seconds; in a compound duration
  // ("1m30s") every part names its unit, so "1m30" fails where "1m30s" parses.
  bool plain_number =
      !text.empty() && text.find_first_not_of("0123456789.") == std::string_view::npos;
  if (!parsed) {
    // Whatever fails as a plain number fails with the explicit unit too.
    if (plain_number)
      FUZZ_CHECK(!parse_duration(std::string(text) + "s"));
    return 0;
  }
  milliseconds ms = *parsed;
  FUZZ_CHECK(ms.count() >= 0);
  FUZZ_CHECK(ms.count() <= 9'000'000'000'000'000LL);
  FUZZ_CHECK(parse_duration(std::to_string(ms.count()) + "ms") == ms);
  if (ms.count() % 1000 == 0) {
    FUZZ_CHECK(parse_duration(std::to_string(ms.count() / 1000)) == ms);
  }
  if (plain_number) {
    FUZZ_CHECK(parse_duration(std::string(text) + "s") == ms);
  }
  std::string shown = format_duration(ms);
  FUZZ_CHECK(!shown.empty() && shown[0] != '-');
  if (ms < std::chrono::seconds(1))
    FUZZ_CHECK(parse_duration(shown) == ms);
  return 0;
}
