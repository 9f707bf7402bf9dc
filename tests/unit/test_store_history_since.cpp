// --since of clock history and since= of /history.json: a duration back
// from the database's clock, or a UTC instant (with history's milliseconds).
#include <chrono>

#include <doctest/doctest.h>

#include "store/history_since.hpp"

using clk::store::HistoryQuery;
using clk::store::set_history_since;
using std::chrono::milliseconds;

namespace {

long long epoch_ms(const HistoryQuery& query) {
  return std::chrono::duration_cast<milliseconds>(query.since->time_since_epoch()).count();
}

}  // namespace

TEST_SUITE("store::history_since") {
  TEST_CASE("a duration is counted back from the database's clock when read") {
    HistoryQuery query;
    REQUIRE(set_history_since(query, "2h"));
    CHECK(query.within == milliseconds(7'200'000));
    CHECK_FALSE(query.since);
  }

  TEST_CASE("a UTC instant, as typed or as history prints it") {
    HistoryQuery query;
    REQUIRE(set_history_since(query, "2026-11-26"));
    CHECK(epoch_ms(query) == 1'795'651'200'000);
    CHECK_FALSE(query.within);
    REQUIRE(set_history_since(query, "2026-11-26T03:00Z"));
    CHECK(epoch_ms(query) == 1'795'651'200'000 + 3 * 3'600'000);
    REQUIRE(set_history_since(query, "2026-11-26T03:00:00.250Z"));
    CHECK(epoch_ms(query) == 1'795'651'200'000 + 3 * 3'600'000 + 250);
    REQUIRE(set_history_since(query, "2026-11-26T03:00:00.5"));
    CHECK(epoch_ms(query) == 1'795'651'200'000 + 3 * 3'600'000 + 500);
  }

  TEST_CASE("anything else leaves the query as it was") {
    HistoryQuery query;
    for (const char* text : {"", "yesterday", "-5m", "2026-11-26T03:00:00.Z", "2026-13-01",
                             "2026-11-26T03:00:00.12x", "2999-01-01"}) {
      CAPTURE(text);
      CHECK_FALSE(set_history_since(query, text));
    }
    CHECK_FALSE(query.since);
    CHECK_FALSE(query.within);
  }
}
