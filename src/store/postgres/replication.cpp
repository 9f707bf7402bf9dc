// The asynchronous-standby check of clock init and clock status -v.
#include "store/postgres/replication.hpp"

#include <exception>

namespace clk::store::postgres {

namespace {

// "ASYNC SYNC": the streaming standbys of each kind. A role without pg_monitor
// sees sync_state as NULL, which counts as neither. A base backup in progress
// also has a WAL sender (state 'backup'): not a standby.
constexpr const char* k_standby_counts =
    "SELECT (count(*) FILTER (WHERE sync_state = 'async'))::text || ' ' ||"
    " (count(*) FILTER (WHERE sync_state IN ('sync', 'quorum')))::text"
    " FROM pg_stat_replication WHERE state = 'streaming'";

}  // namespace

std::optional<std::string> asynchronous_standby_warning(Connection& conn) {
  std::string counts;
  try {
    counts = conn.call("the replication check", k_standby_counts, {}, Retry::if_broken);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  auto space = counts.find(' ');
  if (space == std::string::npos || counts.substr(0, space) == "0" ||
      counts.substr(space + 1) != "0") {
    return std::nullopt;
  }
  return "this PostgreSQL server streams to asynchronous standbys only: a grant committed here "
         "but not yet replicated is lost if a standby is promoted, and the same lock and token "
         "can then be granted again; name a standby in synchronous_standby_names (with "
         "synchronous_commit = on), see 'High availability' in man clock";
}

}  // namespace clk::store::postgres
