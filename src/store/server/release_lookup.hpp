// After a release whose reply was lost (the connection dropped while it
// ran), a server store looks the leases up instead of sending it again: a
// second release would undo another re-entry (man clock, GUARANTEES).
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "store/store.hpp"

namespace clk::store {

using ReadStatus = std::function<Snapshot(const StatusQuery&)>;
using ReadHistory = std::function<std::vector<HistoryEvent>(const HistoryQuery&)>;

// Whether a release whose reply was lost took effect: true (every lease
// is one re-entry lower, or gone with a `released` event under its token),
// false (none is: send it again; a lease gone otherwise is refused by that
// second release as it would have been by the first), nullopt when the
// leases disagree (someone else changed them meanwhile).
// `request` names the tokens and depths held (ReleaseRequest::tokens,
// depths); `status` and `history` read the store within the release's
// patience.
std::optional<bool> release_took_effect(const ReleaseRequest& request, const ReadStatus& status,
                                        const ReadHistory& history);

}  // namespace clk::store
