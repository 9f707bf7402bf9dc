// Small text helpers for everything shown to people: escaping stored data so
// that it cannot drive the terminal, instants, and aligned tables.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lock/lease.hpp"

namespace clk::output {

// Control characters (C0, DEL, C1) and bytes that are not UTF-8 become \xNN,
// backslashes \\: a command line holding escape sequences is shown, never
// obeyed; printable UTF-8 shows as typed.
std::string escape_for_terminal(std::string_view text);

// A Prometheus label value in the text exposition format: \\, \" and
// newlines escaped.
std::string prometheus_label_value(std::string_view text);

// ISO 8601 in UTC with milliseconds: 2026-11-22T19:40:03.123Z.
std::string iso8601(lock::Instant instant);

// The SGR colour of a table cell ("" for none): row 0 is the header, data
// rows count from 1.
using CellColour = std::function<std::string_view(std::size_t row, std::size_t column)>;

// Renders rows as columns padded to their widest cell, two spaces apart. With
// `colour`, a coloured cell is wrapped in its SGR sequence; widths count the
// visible text only, so columns stay aligned.
std::string table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows, const CellColour& colour = {});

}  // namespace clk::output
