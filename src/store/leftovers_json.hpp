// The processes a holder's command left running (lock::Leftover), as both
// stores keep them in a lease's and a history record's `leftovers` column:
// a JSON array of {"pid", "command", "fate"}. Written and read here only,
// so the two backends hold the same text. Header-only: the PostgreSQL
// module uses it too, and imports nothing from the binary for it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lock/lease.hpp"

namespace clk::store {

inline std::string_view to_string(lock::LeftoverFate fate) {
  switch (fate) {
    case lock::LeftoverFate::running:
      return "running";
    case lock::LeftoverFate::waited:
      return "waited";
    case lock::LeftoverFate::ended:
      return "ended";
  }
  return "running";
}

inline std::optional<lock::LeftoverFate> leftover_fate_of(std::string_view name) {
  for (auto fate :
       {lock::LeftoverFate::running, lock::LeftoverFate::waited, lock::LeftoverFate::ended}) {
    if (to_string(fate) == name)
      return fate;
  }
  return std::nullopt;
}

inline nlohmann::json leftovers_json(const std::vector<lock::Leftover>& leftovers) {
  auto array = nlohmann::json::array();
  for (const auto& leftover : leftovers) {
    array.push_back(
        {{"pid", leftover.pid}, {"command", leftover.command}, {"fate", to_string(leftover.fate)}});
  }
  return array;
}

inline std::string encode_leftovers(const std::vector<lock::Leftover>& leftovers) {
  return leftovers_json(leftovers).dump();
}

// From the JSON array (a parsed column); entries that are not
// {"pid": number, "command": string, "fate": known name} are skipped, so
// that a row written by hand cannot break `status` or `history`.
inline std::vector<lock::Leftover> leftovers_of(const nlohmann::json& array) {
  std::vector<lock::Leftover> out;
  if (!array.is_array())
    return out;
  for (const auto& item : array) {
    if (!item.is_object() || !item.contains("pid") || !item["pid"].is_number_integer())
      continue;
    lock::Leftover leftover;
    leftover.pid = item["pid"].get<std::int64_t>();
    if (item.contains("command") && item["command"].is_string())
      leftover.command = item["command"].get<std::string>();
    if (item.contains("fate") && item["fate"].is_string()) {
      if (auto fate = leftover_fate_of(item["fate"].get<std::string>()))
        leftover.fate = *fate;
    }
    out.push_back(std::move(leftover));
  }
  return out;
}

// From a column's text; NULL or empty text: none.
inline std::vector<lock::Leftover> decode_leftovers(std::string_view text) {
  if (text.empty())
    return {};
  auto parsed = nlohmann::json::parse(text, nullptr, false);
  return leftovers_of(parsed);
}

}  // namespace clk::store
