// See release_lookup.hpp.
#include "store/server/release_lookup.hpp"

#include <algorithm>

namespace clk::store {

std::optional<bool> release_took_effect(const ReleaseRequest& request, const ReadStatus& status,
                                        const ReadHistory& history) {
  int done = 0;
  for (std::size_t i = 0; i < request.resources.size(); ++i) {
    const auto& resource = request.resources[i];
    StatusQuery query;
    query.ns = request.ns;
    query.prefix = resource;
    Snapshot snapshot = status(query);
    auto lease = std::find_if(snapshot.holders.begin(), snapshot.holders.end(), [&](auto& held) {
      return held.resource == resource && held.owner == *request.owner;
    });
    if (lease != snapshot.holders.end()) {
      if (lease->token != request.tokens[i])
        return std::nullopt;
      if (lease->depth == request.depths[i] - 1)
        ++done;
      else if (lease->depth != request.depths[i])
        return std::nullopt;
      continue;
    }
    if (request.depths[i] != 1)
      continue;  // gone from under a re-entry: the release sent again says why
    HistoryQuery past;
    past.ns = request.ns;
    past.prefix = resource;
    past.event = EventKind::released;
    past.limit = 100;
    auto events = history(past);
    if (std::any_of(events.begin(), events.end(), [&](const HistoryEvent& event) {
          return event.resource == resource && event.owner == *request.owner &&
                 event.token == request.tokens[i];
        }))
      ++done;
  }
  if (done == 0)
    return false;
  if (done == static_cast<int>(request.resources.size()))
    return true;
  return std::nullopt;
}

}  // namespace clk::store
