// Names of history events.
#include "store/store.hpp"

#include <algorithm>

namespace clk::store {

milliseconds waiter_lifetime(milliseconds ttl) {
  constexpr milliseconds k_longest{30'000};
  constexpr milliseconds k_shortest{1'000};
  if (ttl.count() == 0)
    return k_longest;
  return std::clamp(ttl, k_shortest, k_longest);
}

std::string_view to_string(EventKind kind) {
  switch (kind) {
    case EventKind::acquired:
      return "acquired";
    case EventKind::released:
      return "released";
    case EventKind::expired:
      return "expired";
    case EventKind::forced:
      return "forced";
    case EventKind::lost:
      return "lost";
  }
  return "unknown";
}

}  // namespace clk::store
