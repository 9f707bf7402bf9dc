#include "store/history_since.hpp"

#include <cctype>

#include "util/duration.hpp"
#include "util/utc_instant.hpp"

namespace clk::store {

namespace {

// "…:SS.fffZ": the instant without its fraction, and the fraction's
// milliseconds (history prints three digits; more are cut, fewer padded).
std::optional<lock::Instant> instant_with_fraction(std::string_view text) {
  std::chrono::milliseconds fraction{0};
  if (auto dot = text.find('.'); dot != std::string_view::npos) {
    std::string_view digits = text.substr(dot + 1);
    if (digits.ends_with('Z') || digits.ends_with('z'))
      digits.remove_suffix(1);
    if (digits.empty() || digits.size() > 9)
      return std::nullopt;
    int ms = 0;
    for (std::size_t i = 0; i < digits.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(digits[i])))
        return std::nullopt;
      if (i < 3)
        ms = ms * 10 + (digits[i] - '0');
    }
    for (std::size_t i = digits.size(); i < 3; ++i)
      ms *= 10;
    fraction = std::chrono::milliseconds(ms);
    text = text.substr(0, dot);
  }
  // An instant is nanoseconds in 64 bits: past 2262 it would wrap around.
  if (text.size() >= 4 && text.substr(0, 4) > "2261")
    return std::nullopt;
  auto whole = util::parse_utc_instant(text);
  if (!whole)
    return std::nullopt;
  return *whole + fraction;
}

}  // namespace

bool set_history_since(HistoryQuery& query, std::string_view text) {
  if (auto ago = util::parse_duration(text)) {
    query.within = *ago;
    query.since.reset();
    return true;
  }
  if (auto at = instant_with_fraction(text)) {
    query.since = std::chrono::time_point_cast<lock::Instant::duration>(*at);
    query.within.reset();
    return true;
  }
  return false;
}

}  // namespace clk::store
