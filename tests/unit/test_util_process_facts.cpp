// command_line (util/process_facts): what `status` and `history` store as the
// wrapped command: quoted as a shell needs it, and always valid UTF-8 (which
// PostgreSQL's text and JSON require), with every byte still recoverable;
// and primary_ip, the address an owner is recorded with.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <set>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "util/process_facts.hpp"

using clk::util::command_line;
using clk::util::is_valid_utf8;

TEST_SUITE("util::process_facts") {
  TEST_CASE("plain arguments stay as they are, others are single-quoted") {
    CHECK(command_line({"ls", "-l", "/tmp"}) == "ls -l /tmp");
    CHECK(command_line({"echo", "a b", "it's"}) == "echo 'a b' 'it'\\''s'");
    CHECK(command_line({"echo", ""}) == "echo ''");
    CHECK(command_line({"echo", "x'; drop table leases; --"}) ==
          "echo 'x'\\''; drop table leases; --'");
  }

  TEST_CASE("control characters are kept: they are escaped on output, not stored escaped") {
    CHECK(command_line({"printf", "\x1b[31m"}) == "printf '\x1b[31m'");
  }

  TEST_CASE("an argument that is not valid UTF-8 is stored in $'...' form with \\xNN") {
    std::string line = command_line({"echo", "caf\xe9", "\xff'\\", "caf\xc3\xa9"});
    CHECK(line == "echo $'caf\\xe9' $'\\xff\\'\\\\' 'caf\xc3\xa9'");
    CHECK(is_valid_utf8(line));
  }

  TEST_CASE("UTF-8 validation refuses overlong forms, surrogates and truncated sequences") {
    CHECK(is_valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x92"));
    CHECK(!is_valid_utf8("\xc0\xaf"));          // overlong '/'
    CHECK(!is_valid_utf8("\xed\xa0\x80"));      // a surrogate
    CHECK(!is_valid_utf8("\xe2\x82"));          // cut short
    CHECK(!is_valid_utf8("\xf4\x90\x80\x80"));  // beyond U+10FFFF
  }

  TEST_CASE("primary_ip is an address of one of this host's interfaces that are up, not loopback") {
    // What the kernel lists, as primary_ip() did before it asked the route.
    std::set<std::string> addresses;
    ifaddrs* list = nullptr;
    REQUIRE(getifaddrs(&list) == 0);
    for (auto* entry = list; entry; entry = entry->ifa_next) {
      if (!entry->ifa_addr || (entry->ifa_flags & IFF_LOOPBACK) || !(entry->ifa_flags & IFF_UP))
        continue;
      char text[INET6_ADDRSTRLEN] = {};
      int family = entry->ifa_addr->sa_family;
      if (family == AF_INET) {
        inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(entry->ifa_addr)->sin_addr, text,
                  sizeof text);
      } else if (family == AF_INET6) {
        inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(entry->ifa_addr)->sin6_addr, text,
                  sizeof text);
      } else {
        continue;
      }
      addresses.insert(text);
    }
    freeifaddrs(list);
    std::string ip = clk::util::primary_ip();
    INFO("primary_ip: '" << ip << "'");
    if (addresses.empty())
      CHECK(ip.empty());
    else
      CHECK(addresses.count(ip) == 1);
  }
}
