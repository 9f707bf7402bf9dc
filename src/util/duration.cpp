// Parsing and rendering of durations.
#include "util/duration.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>

namespace clk::util {

namespace {

std::optional<double> unit_in_ms(std::string_view unit) {
  if (unit.empty() || unit == "s")
    return 1000.0;
  if (unit == "ms")
    return 1.0;
  if (unit == "m")
    return 60'000.0;
  if (unit == "h")
    return 3'600'000.0;
  if (unit == "d")
    return 86'400'000.0;
  return std::nullopt;
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  std::size_t digits_end = 0;
  bool seen_dot = false;
  while (digits_end < text.size()) {
    char c = text[digits_end];
    if (c == '.' && !seen_dot) {
      seen_dot = true;
    } else if (c < '0' || c > '9') {
      break;
    }
    ++digits_end;
  }
  std::string_view number = text.substr(0, digits_end);
  if (number.empty() || number == "." || number.size() > 18)
    return std::nullopt;
  auto unit = unit_in_ms(text.substr(digits_end));
  if (!unit)
    return std::nullopt;
  double value = 0;
  // std::from_chars for double is in libstdc++ 11+.
  auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc() || ptr != number.data() + number.size())
    return std::nullopt;
  double ms = std::round(value * *unit);
  // Cap at about 292 years so that arithmetic on it cannot overflow later.
  if (!std::isfinite(ms) || ms > 9.0e15)
    return std::nullopt;
  return std::chrono::milliseconds(static_cast<std::int64_t>(ms));
}

std::string format_duration(std::chrono::milliseconds duration) {
  using namespace std::chrono;
  std::string sign = duration.count() < 0 ? "-" : "";
  auto left = duration.count() < 0 ? -duration : duration;
  if (left < 1s)
    return sign + std::to_string(left.count()) + "ms";
  auto d = duration_cast<days>(left);
  left -= d;
  auto h = duration_cast<hours>(left);
  left -= h;
  auto m = duration_cast<minutes>(left);
  left -= m;
  auto s = duration_cast<seconds>(left);
  auto part = [](long long n, const char* unit) { return std::to_string(n) + unit; };
  if (d.count() > 0)
    return sign + part(d.count(), "d") + (h.count() ? part(h.count(), "h") : "");
  if (h.count() > 0)
    return sign + part(h.count(), "h") + (m.count() ? part(m.count(), "m") : "");
  if (m.count() > 0)
    return sign + part(m.count(), "m") + (s.count() ? part(s.count(), "s") : "");
  return sign + part(s.count(), "s");
}

}  // namespace clk::util
