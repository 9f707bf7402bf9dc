// When human output is coloured (a terminal, no NO_COLOR, a TERM that is not
// dumb), and that colour never breaks a table's alignment.
#include <doctest/doctest.h>

#include "output/colour.hpp"
#include "output/text.hpp"

using clk::output::colour_wanted;

TEST_CASE("colour is used on a terminal with a real TERM and no NO_COLOR") {
  CHECK(colour_wanted(true, nullptr, "xterm-256color"));
  CHECK(colour_wanted(true, nullptr, "screen"));
}

TEST_CASE("colour is never used when the output is not a terminal") {
  CHECK_FALSE(colour_wanted(false, nullptr, "xterm-256color"));
  CHECK_FALSE(colour_wanted(false, "", "xterm"));
}

TEST_CASE("NO_COLOR set to any non-empty value turns colour off") {
  CHECK_FALSE(colour_wanted(true, "1", "xterm"));
  CHECK_FALSE(colour_wanted(true, "0", "xterm"));  // the value does not matter
  CHECK_FALSE(colour_wanted(true, "no", "xterm"));
}

TEST_CASE("an empty NO_COLOR is the same as none") {
  CHECK(colour_wanted(true, "", "xterm"));
}

TEST_CASE("no colour for TERM=dumb, an empty TERM or no TERM") {
  CHECK_FALSE(colour_wanted(true, nullptr, "dumb"));
  CHECK_FALSE(colour_wanted(true, nullptr, ""));
  CHECK_FALSE(colour_wanted(true, nullptr, nullptr));
}

TEST_CASE("a coloured table cell is wrapped in SGR and the columns stay aligned") {
  std::vector<std::string> header = {"A", "STATE", "C"};
  std::vector<std::vector<std::string>> rows = {{"x", "held", "1"}, {"yy", "waiting #1", "2"}};
  std::string plain = clk::output::table(header, rows);
  std::string coloured =
      clk::output::table(header, rows, [](std::size_t row, std::size_t column) -> std::string_view {
        return row > 0 && column == 1 ? "32" : "";
      });
  CHECK(plain.find('\x1b') == std::string::npos);
  CHECK(coloured.find("\x1b[32mheld\x1b[0m") != std::string::npos);
  CHECK(coloured.find("\x1b[32mwaiting #1\x1b[0m") != std::string::npos);
  // Without the escape sequences, the coloured table is the plain one.
  std::string stripped = coloured;
  for (std::string sgr : {"\x1b[32m", "\x1b[0m"}) {
    for (auto at = stripped.find(sgr); at != std::string::npos; at = stripped.find(sgr))
      stripped.erase(at, sgr.size());
  }
  CHECK(stripped == plain);
}
