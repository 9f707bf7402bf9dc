// A resource name: dotted segments, each [A-Za-z0-9_-]+, at most 16 segments
// and 255 bytes (man clock, DESCRIPTION). Ancestry counts whole segments only.
#pragma once

#include <compare>
#include <string>
#include <string_view>
#include <vector>

namespace clk::lock {

class Resource {
 public:
  static constexpr std::size_t k_max_segments = 16;
  static constexpr std::size_t k_max_bytes = 255;

  // Parses and validates `text`; throws clk::Error(usage) saying what is wrong.
  static Resource parse(std::string_view text);

  const std::string& str() const { return m_name; }
  std::vector<std::string_view> segments() const;

  // True if `other` lies strictly below this resource (`a` is an ancestor of `a.b`).
  bool is_ancestor_of(const Resource& other) const;
  // Equal, or one is an ancestor of the other: the pairs that may conflict.
  bool is_related_to(const Resource& other) const;
  // The strict ancestors, nearest last: "a.b.c" gives {"a", "a.b"}.
  std::vector<std::string> ancestors() const;
  // Every descendant `d` sorts with descendant_floor() < d < descendant_ceiling():
  // "a." and "a/" ('/' follows '.' in ASCII and no segment holds either), so
  // an index range scan finds them without LIKE.
  std::string descendant_floor() const { return m_name + "."; }
  std::string descendant_ceiling() const { return m_name + "/"; }

  auto operator<=>(const Resource&) const = default;

 private:
  explicit Resource(std::string name) : m_name(std::move(name)) {}
  std::string m_name;
};

// The most resources one call may name. Each is a row in every table a grant,
// renewal or release touches (and one run_counts row for good), so an
// unbounded list lets one caller slow every `status`; a job that needs more
// locks than this takes their common ancestor instead.
inline constexpr std::size_t k_max_resources_per_call = 64;

// Parses each name, sorts them into the canonical order in which all locks are
// taken, and removes duplicates. Throws clk::Error(usage) on a bad name or on
// more than k_max_resources_per_call names.
std::vector<Resource> canonical_resources(const std::vector<std::string>& names);

// Joins names with `separator` ("a,b").
std::string join(const std::vector<Resource>& resources, std::string_view separator);

}  // namespace clk::lock
