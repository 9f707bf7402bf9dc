// Resource names (man clock, DESCRIPTION): whatever parses is exactly the input, stays within
// the limits, and its ancestors parse and are its ancestors; whatever does not
// parse is a usage error (exit 64), never another exception.
#include <optional>

#include "error.hpp"
#include "fuzz_check.hpp"
#include "lock/resource.hpp"

using clk::lock::Resource;

namespace {

bool segment_byte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

// The man page's rule (DESCRIPTION), written independently of the parser.
bool valid_by_spec(std::string_view text) {
  if (text.empty() || text.size() > Resource::k_max_bytes)
    return false;
  std::size_t segments = 1;
  bool segment_empty = true;
  for (char c : text) {
    if (c == '.') {
      if (segment_empty)
        return false;
      ++segments;
      segment_empty = true;
    } else if (segment_byte(c)) {
      segment_empty = false;
    } else {
      return false;
    }
  }
  return !segment_empty && segments <= Resource::k_max_segments;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto text = clk::fuzz::as_text(data, size);
  std::optional<Resource> parsed;
  try {
    parsed = Resource::parse(text);
  } catch (const clk::Error& error) {
    FUZZ_CHECK(error.code() == clk::ExitCode::usage);
  }
  FUZZ_CHECK(parsed.has_value() == valid_by_spec(text));
  if (!parsed)
    return 0;
  const Resource& name = *parsed;
  FUZZ_CHECK(name.str() == text);  // round-trips to itself
  FUZZ_CHECK(Resource::parse(name.str()) == name);
  auto segments = name.segments();
  FUZZ_CHECK(!segments.empty() && segments.size() <= Resource::k_max_segments);
  auto ancestors = name.ancestors();
  FUZZ_CHECK(ancestors.size() + 1 == segments.size());
  for (const auto& ancestor_text : ancestors) {
    Resource ancestor = Resource::parse(ancestor_text);  // throws (a crash) if not valid
    FUZZ_CHECK(ancestor.is_ancestor_of(name));
    FUZZ_CHECK(!name.is_ancestor_of(ancestor));
    FUZZ_CHECK(ancestor.is_related_to(name) && name.is_related_to(ancestor));
    // Every descendant sorts strictly inside the ancestor's range (the SQL
    // prefix scans rely on it).
    FUZZ_CHECK(ancestor.descendant_floor() < name.str());
    FUZZ_CHECK(name.str() < ancestor.descendant_ceiling());
  }
  FUZZ_CHECK(!name.is_ancestor_of(name) && name.is_related_to(name));
  // Whole segments only: a longer last segment is a sibling, not a descendant.
  if (name.str().size() < Resource::k_max_bytes) {
    Resource longer = Resource::parse(name.str() + "x");
    FUZZ_CHECK(!name.is_ancestor_of(longer) && !name.is_related_to(longer));
  }
  return 0;
}
