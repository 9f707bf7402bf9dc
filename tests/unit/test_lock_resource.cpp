// Resource names (man clock, DESCRIPTION): what parses, what is a usage error, whole-segment
// ancestry, and the canonical order in which several resources are taken.
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "error.hpp"
#include "lock/resource.hpp"

using clk::Error;
using clk::ExitCode;
using clk::lock::canonical_resources;
using clk::lock::Resource;

namespace {

// The code of the clk::Error that parsing `text` throws, or ok if it parses.
ExitCode parse_code(std::string_view text) {
  try {
    Resource::parse(text);
    return ExitCode::ok;
  } catch (const Error& e) {
    return e.code();
  }
}

std::string segments_of(int count) {
  std::string name = "s0";
  for (int i = 1; i < count; ++i)
    name += ".s" + std::to_string(i);
  return name;
}

Resource r(std::string_view text) {
  return Resource::parse(text);
}

}  // namespace

TEST_SUITE("lock::Resource") {
  TEST_CASE("dotted names of letters, digits, underscore and dash parse") {
    for (const char* name :
         {"bootstrap", "ldap.import", "tenant-7.billing.2026_11", "A", "0", "_", "-", "a-b_C.9"}) {
      CAPTURE(name);
      CHECK(r(name).str() == name);
    }
  }

  TEST_CASE("segments splits on dots") {
    Resource resource = r("tenant-7.billing.2026_11");  // segments() views into it
    auto segments = resource.segments();
    REQUIRE(segments.size() == 3);
    CHECK(segments[0] == "tenant-7");
    CHECK(segments[1] == "billing");
    CHECK(segments[2] == "2026_11");
    CHECK(r("solo").segments().size() == 1);
  }

  TEST_CASE("16 segments are accepted and 17 are a usage error") {
    CHECK(r(segments_of(16)).segments().size() == 16);
    CHECK(parse_code(segments_of(17)) == ExitCode::usage);
  }

  TEST_CASE("255 bytes are accepted and 256 are a usage error") {
    std::string name255(255, 'a');
    CHECK(r(name255).str().size() == 255);
    CHECK(parse_code(std::string(256, 'a')) == ExitCode::usage);
    // Across segments too: 15 dots + 16 segments.
    std::string dotted = std::string(240, 'b') + ".c.d.e.f.g.h.i";
    dotted += std::string(255 - dotted.size(), 'z');
    REQUIRE(dotted.size() == 255);
    CHECK(r(dotted).str() == dotted);
    CHECK(parse_code(dotted + "z") == ExitCode::usage);
  }

  TEST_CASE("an empty name or an empty segment is a usage error") {
    for (const char* name : {"", ".", "a..b", ".a", "a.", "a.b.", ".."}) {
      CAPTURE(name);
      CHECK(parse_code(name) == ExitCode::usage);
    }
  }

  TEST_CASE("characters outside [A-Za-z0-9_-] are a usage error") {
    for (const char* name : {"a b", "a/b", "a*", "a%", "x'; drop table leases; --", "a\tb", "a\n",
                             "a,b", "a:b", "a+b", "é", "a\\b", "a\"b", "$HOME", "a;b"}) {
      CAPTURE(name);
      CHECK(parse_code(name) == ExitCode::usage);
    }
  }

  TEST_CASE("a NUL byte or non-UTF-8 bytes are a usage error") {
    CHECK(parse_code(std::string("a\0b", 3)) == ExitCode::usage);
    CHECK(parse_code(std::string("a\0", 2)) == ExitCode::usage);
    CHECK(parse_code("a\xff") == ExitCode::usage);
    CHECK(parse_code("\xc3\x28") == ExitCode::usage);
    CHECK(parse_code("caf\xc3\xa9") == ExitCode::usage);  // valid UTF-8, but not ASCII
  }

  TEST_CASE("a rejected name's message is one line that says what is wrong") {
    try {
      Resource::parse("a..b\nsecond line");
      FAIL("parse accepted an invalid name");
    } catch (const Error& e) {
      std::string message = e.what();
      CHECK(e.code() == ExitCode::usage);
      CHECK_FALSE(message.empty());
      CHECK(message.find('\n') == std::string::npos);
    }
  }

  TEST_CASE("an ancestor is a whole-segment prefix") {
    CHECK(r("foo").is_ancestor_of(r("foo.bar")));
    CHECK(r("foo").is_ancestor_of(r("foo.bar.woof")));
    CHECK(r("foo.bar").is_ancestor_of(r("foo.bar.woof")));
    CHECK_FALSE(r("foo.bar.woof").is_ancestor_of(r("foo")));
    CHECK_FALSE(r("foo").is_ancestor_of(r("foo")));
  }

  TEST_CASE("job_1 is no ancestor of jobX1.y and foo none of foobar") {
    CHECK_FALSE(r("job_1").is_ancestor_of(r("jobX1.y")));
    CHECK_FALSE(r("job_1").is_related_to(r("jobX1.y")));
    CHECK_FALSE(r("foo").is_ancestor_of(r("foobar")));
    CHECK_FALSE(r("foo").is_related_to(r("foobar")));
    CHECK_FALSE(r("foo").is_ancestor_of(r("foobar.baz")));
    CHECK_FALSE(r("foo.b").is_ancestor_of(r("foo.bar")));
    CHECK(r("foo-").is_ancestor_of(r("foo-.x")));  // "foo-" is a whole segment there
  }

  TEST_CASE("related means equal, ancestor or descendant; siblings are unrelated") {
    CHECK(r("foo").is_related_to(r("foo")));
    CHECK(r("foo").is_related_to(r("foo.bar.woof")));
    CHECK(r("foo.bar.woof").is_related_to(r("foo")));
    CHECK_FALSE(r("foo.bar").is_related_to(r("foo.baz")));
    CHECK_FALSE(r("a.b.c").is_related_to(r("a.b.d")));
    CHECK_FALSE(r("a").is_related_to(r("b")));
  }

  TEST_CASE("ancestors lists the strict ancestors, nearest last") {
    CHECK(r("a.b.c").ancestors() == std::vector<std::string>{"a", "a.b"});
    CHECK(r("a").ancestors().empty());
  }

  TEST_CASE("descendants sort strictly between the floor and the ceiling") {
    Resource a = r("a");
    for (const char* name : {"a.b", "a.b.c", "a.z", "a.0", "a.-", "a._", "a.Z.z"}) {
      CAPTURE(name);
      CHECK(a.descendant_floor() < std::string(name));
      CHECK(std::string(name) < a.descendant_ceiling());
    }
    for (const char* name : {"a", "ab", "a-", "a_b", "b", "a0"}) {
      CAPTURE(name);
      bool inside =
          a.descendant_floor() < std::string(name) && std::string(name) < a.descendant_ceiling();
      CHECK_FALSE(inside);
    }
  }

  TEST_CASE("canonical_resources sorts and removes duplicates") {
    auto resources = canonical_resources({"b", "a.c", "a", "b", "a.c"});
    std::vector<std::string> names;
    for (const auto& resource : resources)
      names.push_back(resource.str());
    CHECK(names == std::vector<std::string>{"a", "a.c", "b"});
  }

  TEST_CASE("the canonical order does not depend on the order given") {
    auto one = canonical_resources({"x", "m.n", "a"});
    auto other = canonical_resources({"a", "x", "m.n"});
    CHECK(one == other);
  }

  TEST_CASE("canonical_resources rejects the whole list for one bad name") {
    try {
      canonical_resources({"good", "bad..name"});
      FAIL("a bad name was accepted");
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::usage);
    }
  }

  TEST_CASE("join separates names with the separator") {
    CHECK(clk::lock::join(canonical_resources({"b", "a"}), ",") == "a,b");
    CHECK(clk::lock::join(canonical_resources({"only"}), ",") == "only");
    CHECK(clk::lock::join({}, ",").empty());
  }

  TEST_CASE("a rejected name is echoed as typed: UTF-8 kept, control bytes escaped") {
    auto message = [](std::string_view text) {
      try {
        Resource::parse(text);
      } catch (const Error& e) {
        return std::string(e.what());
      }
      return std::string();
    };
    CHECK(message("\xc3\xbcmlaut").find("'\xc3\xbcmlaut'") != std::string::npos);
    CHECK(message("a\x1b[2Jb").find("'a\\x1b[2Jb'") != std::string::npos);
    CHECK(message("caf\xe9").find("'caf\\xe9'") != std::string::npos);
    // Shortened to 64 bytes without cutting the last letter in two.
    std::string long_name = std::string(63, 'a') + "\xc3\xbc" + std::string(300, 'b');
    CHECK(message(long_name).find("'" + std::string(63, 'a') + "...'") != std::string::npos);
  }
}
