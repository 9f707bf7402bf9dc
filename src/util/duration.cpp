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

namespace {

// One part of a duration: a number and its unit ("90s", "1.5", "30m").
struct Part {
  double value;
  double unit_ms;
  bool unit_given;
  bool fraction;
};

// Reads one part from the front of TEXT and advances past it.
std::optional<Part> read_part(std::string_view& text) {
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
  std::size_t unit_end = digits_end;
  while (unit_end < text.size() && text[unit_end] >= 'a' && text[unit_end] <= 'z')
    ++unit_end;
  std::string_view unit_text = text.substr(digits_end, unit_end - digits_end);
  auto unit = unit_in_ms(unit_text);
  if (!unit)
    return std::nullopt;
  double value = 0;
  // std::from_chars for double is in libstdc++ 11+.
  auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc() || ptr != number.data() + number.size())
    return std::nullopt;
  text.remove_prefix(unit_end);
  return Part{value, *unit, !unit_text.empty(), seen_dot};
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  // A compound duration ("1h30m", "2m30s", "1d12h") is parts with units from
  // the largest down, each unit once; only the last part may have a fraction,
  // and a bare number stands alone ("5s5" is a typo, not 5.005 s).
  double ms = 0;
  double previous_unit = 0;
  int parts = 0;
  bool fraction_seen = false;
  while (!text.empty() || parts == 0) {
    auto part = read_part(text);
    if (!part || fraction_seen)
      return std::nullopt;
    if (parts > 0 && (!part->unit_given || part->unit_ms >= previous_unit))
      return std::nullopt;
    if (!part->unit_given && !text.empty())
      return std::nullopt;
    fraction_seen = part->fraction;
    previous_unit = part->unit_ms;
    ms += part->value * part->unit_ms;
    ++parts;
  }
  ms = std::round(ms);
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
