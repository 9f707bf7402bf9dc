// Resource name validation and whole-segment ancestry.
#include "lock/resource.hpp"

#include <algorithm>

#include "error.hpp"
#include "util/shown_text.hpp"

namespace clk::lock {

namespace {

bool is_segment_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

[[noreturn]] void reject(std::string_view why) {
  throw Error(ExitCode::usage,
              "invalid resource name: " + std::string(why) +
                  " (use dotted segments of letters, digits, '_' and '-', like ldap.import)");
}

// Shows a rejected name as typed, in quotes, at most 64 bytes of it: printable
// UTF-8 as is ('ümlaut'), anything else as \xNN.
std::string printable(std::string_view text) {
  std::string_view shown = util::utf8_prefix(text, 64);
  return "'" + util::escape_unprintable(shown) + (shown.size() < text.size() ? "..." : "") + "'";
}

}  // namespace

Resource Resource::parse(std::string_view text) {
  if (text.empty())
    reject("the name is empty");
  if (text.size() > k_max_bytes) {
    reject(printable(text) + " is " + std::to_string(text.size()) + " bytes long, more than 255");
  }
  std::size_t segments = 1;
  std::size_t segment_length = 0;
  for (char c : text) {
    if (c == '.') {
      if (segment_length == 0)
        reject(printable(text) + " has an empty segment");
      ++segments;
      segment_length = 0;
    } else if (!is_segment_char(c)) {
      reject(printable(text) + " contains a character other than letters, digits, '_', '-'");
    } else {
      ++segment_length;
    }
  }
  if (segment_length == 0)
    reject(printable(text) + " has an empty segment");
  if (segments > k_max_segments) {
    reject(printable(text) + " has " + std::to_string(segments) + " segments, more than 16");
  }
  return Resource(std::string(text));
}

std::vector<std::string_view> Resource::segments() const {
  std::vector<std::string_view> out;
  std::string_view rest = m_name;
  for (;;) {
    auto dot = rest.find('.');
    out.push_back(rest.substr(0, dot));
    if (dot == std::string_view::npos)
      return out;
    rest.remove_prefix(dot + 1);
  }
}

bool Resource::is_ancestor_of(const Resource& other) const {
  return other.m_name.size() > m_name.size() && other.m_name.starts_with(m_name) &&
         other.m_name[m_name.size()] == '.';
}

bool Resource::is_related_to(const Resource& other) const {
  return *this == other || is_ancestor_of(other) || other.is_ancestor_of(*this);
}

std::vector<std::string> Resource::ancestors() const {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < m_name.size(); ++i) {
    if (m_name[i] == '.')
      out.push_back(m_name.substr(0, i));
  }
  return out;
}

std::vector<Resource> canonical_resources(const std::vector<std::string>& names) {
  if (names.size() > k_max_resources_per_call) {
    throw Error(ExitCode::usage, std::to_string(names.size()) + " resources in one call: at most " +
                                     std::to_string(k_max_resources_per_call) +
                                     " (lock a common ancestor instead, e.g. 'batch' for "
                                     "'batch.1' and 'batch.2')");
  }
  std::vector<Resource> out;
  out.reserve(names.size());
  for (const auto& name : names)
    out.push_back(Resource::parse(name));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string join(const std::vector<Resource>& resources, std::string_view separator) {
  std::string out;
  for (const auto& resource : resources) {
    if (!out.empty())
      out += separator;
    out += resource.str();
  }
  return out;
}

}  // namespace clk::lock
