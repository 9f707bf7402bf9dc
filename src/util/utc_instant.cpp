// Parsing the UTC instants of utc_instant.hpp with timegm(), which reads
// the broken-down time as UTC whatever TZ says.
#include "util/utc_instant.hpp"

#include <ctime>
#include <string>

namespace clk::util {

std::optional<std::chrono::system_clock::time_point> parse_utc_instant(std::string_view text) {
  if (text.ends_with('Z') || text.ends_with('z'))
    text.remove_suffix(1);
  std::string copy(text);
  std::tm tm{};
  const char* end = nullptr;
  for (const char* format :
       {"%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%d"}) {
    tm = {};
    end = strptime(copy.c_str(), format, &tm);
    if (end && *end == '\0')
      break;
    end = nullptr;
  }
  if (!end)
    return std::nullopt;
  std::time_t seconds = timegm(&tm);
  if (seconds == static_cast<std::time_t>(-1))
    return std::nullopt;
  return std::chrono::system_clock::from_time_t(seconds);
}

}  // namespace clk::util
