// The bounds of what a caller tells about itself (src/lock/limits.hpp): a
// text within its bound is kept, a longer one is cut on a character
// boundary and ends in "…", never longer than the bound.
#include <doctest/doctest.h>

#include "lock/limits.hpp"
#include "util/process_facts.hpp"

using clk::lock::bounded;

TEST_SUITE("lock limits") {
  TEST_CASE("a text within its bound is kept as it is") {
    CHECK(bounded("make backup", 4096) == "make backup");
    CHECK(bounded(std::string(255, 'h'), clk::lock::k_max_host_bytes) == std::string(255, 'h'));
  }

  TEST_CASE("a longer text is cut to its bound, ending in an ellipsis") {
    std::string cut = bounded(std::string(5000, 'x'), clk::lock::k_max_command_bytes);
    CHECK(cut.size() == clk::lock::k_max_command_bytes);
    CHECK(cut.ends_with("\u2026"));
    CHECK(cut.starts_with(std::string(4000, 'x')));
  }

  TEST_CASE("a cut never splits a character: the result is valid UTF-8") {
    // "é" is two bytes: cut at every length, the text stays well-formed.
    std::string text;
    for (int i = 0; i < 40; ++i)
      text += "\xc3\xa9";
    for (std::size_t bound = 0; bound <= text.size(); ++bound) {
      CAPTURE(bound);
      std::string cut = bounded(text, bound);
      CHECK(cut.size() <= bound);
      CHECK(clk::util::is_valid_utf8(cut));
    }
  }
}
