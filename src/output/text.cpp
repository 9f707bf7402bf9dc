// Escaping, time stamps and tables for human output.
#include "output/text.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "util/shown_text.hpp"

namespace clk::output {

std::string prometheus_label_value(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"')
      out += '\\';
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return out;
}

std::string escape_for_terminal(std::string_view text) {
  return util::escape_unprintable(text);
}

std::string iso8601(lock::Instant instant) {
  using namespace std::chrono;
  auto ms = duration_cast<milliseconds>(instant.time_since_epoch()).count();
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(ms % 1000));
  return buffer;
}

std::string table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows, const CellColour& colour) {
  std::vector<std::size_t> widths(header.size());
  auto measure = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  };
  measure(header);
  for (const auto& row : rows)
    measure(row);
  std::string out;
  std::size_t row_number = 0;
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      std::string_view sgr = colour ? colour(row_number, i) : std::string_view();
      if (sgr.empty())
        line += row[i];
      else
        line += "\033[" + std::string(sgr) + "m" + row[i] + "\033[0m";
      if (i + 1 < row.size())
        line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    out += line + "\n";
    ++row_number;
  };
  emit(header);
  for (const auto& row : rows)
    emit(row);
  return out;
}

}  // namespace clk::output
