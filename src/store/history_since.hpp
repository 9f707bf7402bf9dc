// --since of clock history and since= of clock serve's /history.json: one
// reading of the text, so that both mean exactly the same.
#pragma once

#include <string_view>

#include "store/store.hpp"

namespace clk::store {

// A duration back from the database's clock when the history is read
// ("90s", "2h", "1d": query.within), or a UTC instant ("2026-11-26",
// "2026-11-26T03:00Z", "2026-11-26T03:00:00.250Z", as history prints it:
// query.since). False, the query unchanged, for any other text.
bool set_history_since(HistoryQuery& query, std::string_view text);

// What set_history_since accepts, for a message.
inline constexpr std::string_view k_history_since_forms =
    "a duration before now (90s, 5m, 2h, 1d) or a UTC time (2026-11-26T03:00Z)";

}  // namespace clk::store
