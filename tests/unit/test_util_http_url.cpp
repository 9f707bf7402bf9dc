// Ping URLs as clock takes them (util/http_url.hpp): checked, and shown
// without their secret part.
#include <doctest/doctest.h>

#include "util/http_url.hpp"
#include "util/utc_instant.hpp"

using clk::util::http_url_problem;
using clk::util::masked_http_url;

TEST_SUITE("util::http_url") {
  TEST_CASE("http and https URLs with a host pass; anything else says why not") {
    CHECK(http_url_problem("https://hc-ping.com/8a1b") == "");
    CHECK(http_url_problem("HTTP://127.0.0.1:8000/ping/x?create=1") == "");
    CHECK(http_url_problem("ftp://example.com/x") != "");
    CHECK(http_url_problem("hc-ping.com/x") != "");
    CHECK(http_url_problem("https:///x") != "");
    CHECK(http_url_problem("https://a b/x") != "");
    CHECK(http_url_problem("https://host/x#frag") != "");
  }

  TEST_CASE("a masked URL keeps scheme and host only") {
    CHECK(masked_http_url("https://hc-ping.com/8a1b-secret") == "https://hc-ping.com/…");
    CHECK(masked_http_url("https://user:pw@host:8000/p?q=1") == "https://host:8000/…");
    CHECK(masked_http_url("https://host") == "https://host");
    CHECK(masked_http_url("nonsense") == "…");
  }

  TEST_CASE("a command line's --ping URLs lose their user:password@ and path, keep the host") {
    using clk::util::mask_ping_urls;
    CHECK(mask_ping_urls("clock run --ping http://u:pw@127.0.0.1:9/x -r a -- true") ==
          "clock run --ping http://****@127.0.0.1:9**** -r a -- true");
    CHECK(mask_ping_urls("clock run --ping=https://hc-ping.com/uuid -r a") ==
          "clock run --ping=https://hc-ping.com**** -r a");
    CHECK(mask_ping_urls("sh -c 'clock run --ping  \"https://h/k?x=1\" -- j'") ==
          "sh -c 'clock run --ping  \"https://h****\" -- j'");
    // A password holding '/' or '@' is covered up to the URL's last '@'.
    CHECK(mask_ping_urls("--ping http://u:p/a@b@h/x") == "--ping http://****@h****");
    CHECK(mask_ping_urls("--ping https://host") == "--ping https://host");
    CHECK(mask_ping_urls("--pinger https://u:p@h/x --ping-x y") ==
          "--pinger https://u:p@h/x --ping-x y");
  }

  TEST_CASE("UTC instants parse with or without time and Z") {
    using namespace std::chrono;
    auto day = clk::util::parse_utc_instant("1970-01-02");
    REQUIRE(day.has_value());
    CHECK(*day == system_clock::time_point(hours(24)));
    CHECK(clk::util::parse_utc_instant("1970-01-01T00:01:00Z") ==
          system_clock::time_point(minutes(1)));
    CHECK(clk::util::parse_utc_instant("1970-01-01 00:01") == system_clock::time_point(minutes(1)));
    CHECK_FALSE(clk::util::parse_utc_instant("yesterday").has_value());
    CHECK_FALSE(clk::util::parse_utc_instant("2026-13-01").has_value());
  }
}
