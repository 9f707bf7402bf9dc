// The SQLite store's deadlock search: an owner that holds one resource and
// waits for another held by an owner waiting for the first is told at once
// (exit 76) instead of queued.
#include <algorithm>
#include <set>

#include "store/sqlite/sqlite_store.hpp"

namespace clk::store::sqlite {

using namespace std::chrono;

// Only the first blocked attempt of a request (a cycle formed later is
// closed, and found, by the request that forms it), by an owner that others
// can be waiting for (it holds a live lease or queue entry), can close a
// cycle. Re-attempts of a queued request skip the search, so many waiters
// polling cost little.
bool SqliteStore::may_close_cycle(const LockRequest& request, std::int64_t now) {
  auto stmt = m_db.prepare(
      "SELECT NOT EXISTS (SELECT 1 FROM waiters WHERE owner = ?1 AND request_id = ?2"
      "                     AND expires_at > ?3)"
      "   AND (EXISTS (SELECT 1 FROM leases WHERE owner = ?1"
      "                  AND (expires_at IS NULL OR expires_at > ?3))"
      "        OR EXISTS (SELECT 1 FROM waiters WHERE owner = ?1 AND expires_at > ?3))");
  stmt.bind(1, request.owner.str()).bind(2, request.request_id).bind(3, now);
  stmt.step();
  return stmt.integer(0) != 0;
}

// Follows "waits for" edges from the owners in our way: an owner waiting (in
// the queue) for a resource that a conflicting lease (or a holder of a full
// semaphore), or a conflicting queue entry ahead of it, of ours or of an
// owner further along the chain holds
// (the edges of waits_for() in sql/postgres/functions/20_acquire.sql).
// Reaching ourselves closes a cycle.
std::optional<Cycle> SqliteStore::find_cycle(const LockRequest& request,
                                             const std::vector<lock::Lease>& blocking_leases,
                                             const std::vector<lock::Waiter>& blocking_waiters,
                                             std::int64_t now) {
  struct Step {
    lock::OwnerId owner;
    std::string host;
    Cycle path;  // the links that lead to this owner, the requester's first
  };
  auto first_link = [&](const lock::Resource& resource) {
    return Cycle{{request.owner, request.info.host, resource}};
  };
  std::vector<Step> frontier;
  for (const auto& lease : blocking_leases)
    frontier.push_back({lease.owner, lease.info.host, first_link(lease.resource)});
  for (const auto& waiter : blocking_waiters)
    frontier.push_back({waiter.owner, waiter.info.host, first_link(waiter.resource)});
  std::set<lock::OwnerId> visited;
  constexpr std::size_t k_max_owners = 256;
  while (!frontier.empty() && visited.size() < k_max_owners) {
    Step step = std::move(frontier.back());
    frontier.pop_back();
    if (!visited.insert(step.owner).second)
      continue;
    auto stmt = m_db.prepare("SELECT " CLOCK_WAITER_COLUMNS
                             " FROM waiters WHERE owner = ?1 AND expires_at > ?2");
    stmt.bind(1, step.owner.str()).bind(2, now);
    std::vector<lock::Waiter> waits;
    while (stmt.step())
      waits.push_back(sqlite::read_waiter(stmt).waiter);
    for (const auto& wait : waits) {
      struct Edge {
        lock::OwnerId owner;
        std::string host;
      };
      std::vector<Edge> edges;
      std::vector<lock::Lease> live;
      for (auto& row : related_leases(wait.ns, wait.resource)) {
        const auto& lease = row.lease;
        if (!lease.expires_at || sqlite::ms_of(*lease.expires_at) > now)
          live.push_back(lease);
      }
      // A semaphore's holders are in the way of its waiter only when it is
      // full (they do not conflict pairwise).
      auto same_semaphore = [&](const lock::Lease& lease) {
        return wait.slots > 0 && lease.slots > 0 && lease.resource == wait.resource &&
               lease.owner != wait.owner;
      };
      auto holders = std::count_if(live.begin(), live.end(), same_semaphore);
      for (const auto& lease : live) {
        bool full_semaphore = same_semaphore(lease) && holders >= wait.slots;
        if (lock::conflicts(lock::claim_of(wait), lock::claim_of(lease)) || full_semaphore)
          edges.push_back({lease.owner, lease.info.host});
      }
      for (auto& row : related_waiters(wait.ns, wait.resource, now)) {
        const auto& ahead = row.waiter;
        if (ahead.position < wait.position &&
            lock::conflicts(lock::claim_of(wait), lock::claim_of(ahead)))
          edges.push_back({ahead.owner, ahead.info.host});
      }
      for (auto& edge : edges) {
        Cycle path = step.path;
        path.push_back({step.owner, step.host, wait.resource});
        if (edge.owner == request.owner)
          return path;
        frontier.push_back({edge.owner, edge.host, std::move(path)});
      }
    }
  }
  return std::nullopt;
}

}  // namespace clk::store::sqlite
