// Text shown back to people as typed: printable UTF-8 kept, everything that
// could drive a terminal or is not UTF-8 escaped byte by byte.
#include <string>

#include <doctest/doctest.h>

#include "util/shown_text.hpp"

using clk::util::escape_unprintable;
using clk::util::utf8_prefix;

TEST_SUITE("util::shown_text") {
  TEST_CASE("printable UTF-8 is shown as typed") {
    CHECK(escape_unprintable("\xc3\xbcmlaut") == "\xc3\xbcmlaut");                        // ümlaut
    CHECK(escape_unprintable("\xe6\x97\xa5\xe6\x9c\xac") == "\xe6\x97\xa5\xe6\x9c\xac");  // 日本
    CHECK(escape_unprintable("\xf0\x9f\x95\x90 job") == "\xf0\x9f\x95\x90 job");  // 🕐 job
    CHECK(escape_unprintable("plain ascii ~") == "plain ascii ~");
  }

  TEST_CASE("controls, DEL and C1 controls are escaped per byte") {
    CHECK(escape_unprintable("a\x1b[31mb") == "a\\x1b[31mb");
    CHECK(escape_unprintable("\x07\r\n\x7f") == "\\x07\\x0d\\x0a\\x7f");
    CHECK(escape_unprintable("\xc2\x9b"
                             "31m") == "\\xc2\\x9b31m");  // U+009B, a CSI
  }

  TEST_CASE("bytes that are not UTF-8 are escaped, the valid ones around them kept") {
    CHECK(escape_unprintable("caf\xe9") == "caf\\xe9");
    CHECK(escape_unprintable("\xff\xc3\xbc") == "\\xff\xc3\xbc");
    CHECK(escape_unprintable("\xc3") == "\\xc3");                             // cut short
    CHECK(escape_unprintable("\xc0\xaf") == "\\xc0\\xaf");                    // overlong '/'
    CHECK(escape_unprintable("\xed\xa0\x80") == "\\xed\\xa0\\x80");           // a surrogate
    CHECK(escape_unprintable("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
  }

  TEST_CASE("a backslash is doubled so that a shown escape is not a typed one") {
    CHECK(escape_unprintable("a\\x1b") == "a\\\\x1b");
  }

  TEST_CASE("a prefix never cuts a UTF-8 sequence in two") {
    CHECK(utf8_prefix("abc", 5) == "abc");
    CHECK(utf8_prefix("ab\xc3\xbc", 3) == "ab");
    CHECK(utf8_prefix("ab\xc3\xbc", 4) == "ab\xc3\xbc");
    CHECK(utf8_prefix("a\xe6\x97\xa5z", 3) == "a");
    CHECK(utf8_prefix("abcdef", 3) == "abc");
  }
}
