// Durations as operators type them (man clock, COMMANDS: 250ms, 90s, 5m, 2h, 1d, plain
// seconds) and as clock prints them back.
#include <chrono>
#include <string>

#include <doctest/doctest.h>

#include "util/duration.hpp"

using namespace std::chrono_literals;
using clk::util::format_duration;
using clk::util::parse_duration;
using std::chrono::milliseconds;

TEST_SUITE("util::duration") {
  TEST_CASE("each unit parses to its length in milliseconds") {
    CHECK(parse_duration("250ms") == milliseconds(250));
    CHECK(parse_duration("90s") == milliseconds(90'000));
    CHECK(parse_duration("5m") == milliseconds(300'000));
    CHECK(parse_duration("2h") == milliseconds(7'200'000));
    CHECK(parse_duration("1d") == milliseconds(86'400'000));
  }

  TEST_CASE("a plain number means seconds") {
    CHECK(parse_duration("30") == milliseconds(30'000));
    CHECK(parse_duration("1") == milliseconds(1'000));
    CHECK(parse_duration("0") == milliseconds(0));
  }

  TEST_CASE("zero is a valid duration in every unit") {
    CHECK(parse_duration("0s") == milliseconds(0));
    CHECK(parse_duration("0ms") == milliseconds(0));
    CHECK(parse_duration("0d") == milliseconds(0));
  }

  TEST_CASE("fractions are accepted down to a millisecond") {
    CHECK(parse_duration("1.5s") == milliseconds(1'500));
    CHECK(parse_duration("0.25s") == milliseconds(250));
    CHECK(parse_duration("1.5m") == milliseconds(90'000));
    CHECK(parse_duration("0.5h") == milliseconds(1'800'000));
    CHECK(parse_duration("2.5") == milliseconds(2'500));
    CHECK(parse_duration("0.001s") == milliseconds(1));
  }

  TEST_CASE("malformed durations are rejected") {
    for (const char* text : {"",       "-1",  "-1s",  "5x",   "s",    "ms",   ".",   ".s",
                             "1.2.3s", "5 s", " 5s",  "5s ",  "5sec", "5mss", "1e3", "1e3s",
                             "+5s",    "5s5", "five", "0x10", "1,5s", "nan",  "inf"}) {
      CAPTURE(text);
      CHECK_FALSE(parse_duration(text).has_value());
    }
  }

  TEST_CASE("durations that overflow are rejected, not wrapped") {
    for (const char* text :
         {"9223372036854775807", "9223372036854775807ms", "18446744073709551616",
          "99999999999999999999d", "10000000000000000d", "999999999999999999999999999999s"}) {
      CAPTURE(text);
      CHECK_FALSE(parse_duration(text).has_value());
    }
  }

  TEST_CASE("compound durations add their parts, largest unit first") {
    CHECK(parse_duration("1h30m") == milliseconds(5'400'000));
    CHECK(parse_duration("2m30s") == milliseconds(150'000));
    CHECK(parse_duration("1d12h") == milliseconds(129'600'000));
    CHECK(parse_duration("1d2h3m4s5ms") == milliseconds(93'784'005));
    CHECK(parse_duration("1s500ms") == milliseconds(1'500));
    CHECK(parse_duration("1h0.5m") == milliseconds(3'630'000));
    CHECK(parse_duration("0h0m") == milliseconds(0));
  }

  TEST_CASE("compound durations out of order, repeated or ambiguous are rejected") {
    for (const char* text : {"30m1h", "1h1h", "1h30", "1h 30m", "1.5h30m", "1h30m.", "1hm", "h30m",
                             "1h-30m", "1h+30m", "30s2m"}) {
      CAPTURE(text);
      CHECK_FALSE(parse_duration(text).has_value());
    }
  }

  TEST_CASE("large but sane durations still parse") {
    CHECK(parse_duration("365d") == milliseconds(365LL * 86'400'000));
    CHECK(parse_duration("3650d") == milliseconds(3650LL * 86'400'000));
  }

  TEST_CASE("format_duration renders compactly, largest unit first") {
    CHECK(format_duration(250ms) == "250ms");
    CHECK(format_duration(0ms) == "0ms");
    CHECK(format_duration(38s) == "38s");
    CHECK(format_duration(4min + 12s) == "4m12s");
    CHECK(format_duration(2h + 5min) == "2h5m");
    CHECK(format_duration(std::chrono::days(3) + 4h) == "3d4h");
    CHECK(format_duration(1min) == "1m");
    CHECK(format_duration(1h) == "1h");
    CHECK(format_duration(std::chrono::days(1)) == "1d");
  }

  TEST_CASE("format_duration marks negative durations with a minus sign") {
    CHECK(format_duration(-250ms) == "-250ms");
    CHECK(format_duration(-(4min + 12s)) == "-4m12s");
  }

  TEST_CASE("whole-unit and compound durations survive a format and parse round trip") {
    for (milliseconds d :
         {milliseconds(250), milliseconds(38s), milliseconds(4min), milliseconds(2h),
          milliseconds(std::chrono::days(1)), milliseconds(4min + 12s), milliseconds(2h + 5min),
          milliseconds(std::chrono::days(3) + 4h)}) {
      CAPTURE(d.count());
      CHECK(parse_duration(format_duration(d)) == d);
    }
  }
}
