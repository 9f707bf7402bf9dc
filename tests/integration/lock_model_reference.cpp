// The reference player: each step applied to leases and a queue in memory,
// with the rules both stores follow (see lock_model_reference.hpp).
#include "lock_model_reference.hpp"

namespace clk::test::model {

StepResult Reference::play(int index, const Step& step) {
  StepResult result;
  m_events = &result.events;
  switch (step.op) {
    case Op::acquire:
    case Op::wait: {
      Attempt attempt = this->attempt(index, step, step.op == Op::wait, true);
      result.tokens = attempt.tokens;
      if (attempt.outcome == Attempt::granted)
        result.exit = 0;
      else if (attempt.outcome == Attempt::deadlock)
        result.exit = 76;
      else if (attempt.outcome == Attempt::usage)
        result.exit = 64;
      else if (step.op == Op::acquire)
        result.exit = 75;  // blocked and -n; a blocked wait stays queued (no exit)
      break;
    }
    case Op::release:
      result.exit = release(step);
      break;
    case Op::renew:
      result.exit = renew(step);
      break;
    case Op::force:
      result.exit = force(step);
      break;
    case Op::time_passes:
      expire_short_leases();
      result.exit = 0;
      break;
  }
  wake_waiters(result);
  result.queue = queue();
  m_events = nullptr;
  return result;
}

// One try_acquire of a store: expired related leases go first (recorded),
// then each resource is decided; all are granted, or none.
Reference::Attempt Reference::attempt(int index, const Step& step, bool queue, bool first) {
  const std::string& ns = m_namespaces.at(step.ns);
  auto resources = lock::canonical_resources(step.resources);
  std::vector<lock::Verdict> verdicts;
  std::vector<lock::OwnerId> in_the_way;
  for (const auto& resource : resources) {
    expire_related(ns, resource);
    lock::Claim claim{ns, resource, id(step.owner), step.mode, step.slots};
    auto decision = lock::decide(claim, live_leases(), earlier_waiters(claim));
    if (decision.verdict == lock::Verdict::slots_mismatch ||
        decision.verdict == lock::Verdict::upgrade)
      return {Attempt::usage, {}};
    for (const auto& lease : decision.blocking_leases)
      in_the_way.push_back(lease.owner);
    for (const auto& waiter : decision.blocking_waiters)
      in_the_way.push_back(waiter.owner);
    verdicts.push_back(decision.verdict);
  }
  Attempt result;
  if (!in_the_way.empty()) {
    // Only the first attempt of a request by an owner others may wait for
    // looks for a cycle, as in both stores.
    if (first && holds_or_waits(id(step.owner)) && closes_cycle(id(step.owner), in_the_way)) {
      dequeue(step, resources);
      return {Attempt::deadlock, {}};
    }
    if (queue)
      enqueue(index, step, resources);
    return {Attempt::blocked, {}};
  }
  grant(step, resources, verdicts, result);
  dequeue(step, resources);
  return result;
}

// Re-entry counts up and keeps the token (the longer lease wins); anything
// else is a new lease with the next token.
void Reference::grant(const Step& step, const std::vector<lock::Resource>& resources,
                      const std::vector<lock::Verdict>& verdicts, Attempt& result) {
  const std::string& ns = m_namespaces.at(step.ns);
  for (std::size_t i = 0; i < resources.size(); ++i) {
    if (verdicts[i] == lock::Verdict::reenter) {
      Held* held = find(ns, resources[i].str(), id(step.owner));
      ++held->lease.depth;
      held->short_ttl = held->short_ttl && step.short_ttl;
      result.tokens.push_back(held->lease.token);
      continue;
    }
    lock::Lease lease{ns,        resources[i], id(step.owner), {},
                      step.mode, step.slots,   ++m_last_token, 1,
                      {},        {},           std::nullopt,   {}};
    record("acquired", lease);
    result.tokens.push_back(lease.token);
    m_leases.push_back({std::move(lease), step.short_ttl, false});
  }
}

// A request keeps its place for a resource it already queues for.
void Reference::enqueue(int index, const Step& step, const std::vector<lock::Resource>& resources) {
  for (const auto& resource : resources) {
    const std::string& ns = m_namespaces.at(step.ns);
    bool queued = std::any_of(m_waiters.begin(), m_waiters.end(), [&](const Queued& q) {
      return q.waiter.ns == ns && q.waiter.resource == resource && q.owner == step.owner;
    });
    if (queued)
      continue;
    lock::Waiter waiter{ns, resource, id(step.owner), {}, step.mode, step.slots, ++m_last_position};
    m_waiters.push_back({std::move(waiter), index, step.owner, step});
  }
}

void Reference::dequeue(const Step& step, const std::vector<lock::Resource>& resources) {
  const std::string& ns = m_namespaces.at(step.ns);
  std::erase_if(m_waiters, [&](const Queued& q) {
    return q.waiter.ns == ns && q.owner == step.owner &&
           std::find(resources.begin(), resources.end(), q.waiter.resource) != resources.end();
  });
}

// A lease gone or expired is not renewed; either is recorded as lost, a gone
// one only where this owner held it.
int Reference::renew(const Step& step) {
  const std::string& ns = m_namespaces.at(step.ns);
  Held* held = find(ns, step.resources.at(0), id(step.owner));
  if (!held) {
    std::string where = "ns" + std::to_string(step.ns) + " " + step.resources.at(0) + " o" +
                        std::to_string(step.owner);
    if (m_acquired.count(where))
      m_events->push_back("lost " + where);
    return 77;
  }
  if (held->expired) {
    record("lost", held->lease);
    m_leases.erase(m_leases.begin() + (held - m_leases.data()));
    return 77;
  }
  held->short_ttl = false;  // renewed for the default TTL
  return 0;
}

// An expired lease found by its owner's release is recorded as expired and
// refused: another owner may have held it meanwhile.
int Reference::release(const Step& step) {
  const std::string& ns = m_namespaces.at(step.ns);
  Held* held = find(ns, step.resources.at(0), id(step.owner));
  if (!held)
    return 77;
  if (held->expired) {
    record("expired", held->lease);
    m_leases.erase(m_leases.begin() + (held - m_leases.data()));
    return 77;
  }
  if (held->lease.depth > 1) {
    --held->lease.depth;
    return 0;
  }
  record("released", held->lease);
  m_leases.erase(m_leases.begin() + (held - m_leases.data()));
  return 0;
}

int Reference::force(const Step& step) {
  const std::string& ns = m_namespaces.at(step.ns);
  bool any = false;
  std::erase_if(m_leases, [&](const Held& held) {
    if (held.lease.ns != ns || held.lease.resource.str() != step.resources.at(0))
      return false;
    record(held.expired ? "expired" : "forced", held.lease);
    any = true;
    return true;
  });
  return any ? 0 : 77;
}

void Reference::expire_short_leases() {
  for (auto& held : m_leases)
    held.expired = held.expired || held.short_ttl;
}

void Reference::expire_related(const std::string& ns, const lock::Resource& resource) {
  std::erase_if(m_leases, [&](const Held& held) {
    if (!held.expired || held.lease.ns != ns || !held.lease.resource.is_related_to(resource))
      return false;
    record("expired", held.lease);
    return true;
  });
}

std::vector<lock::Lease> Reference::live_leases() const {
  std::vector<lock::Lease> live;
  for (const auto& held : m_leases) {
    if (!held.expired)
      live.push_back(held.lease);
  }
  return live;
}

// The waiters of the claim's namespace queued before the claim's own entry
// (all of them when it has none).
std::vector<lock::Waiter> Reference::earlier_waiters(const lock::Claim& claim) const {
  std::int64_t mine = m_last_position + 1;
  for (const auto& q : m_waiters) {
    if (q.waiter.ns == claim.ns && q.waiter.resource == claim.resource &&
        q.waiter.owner == claim.owner)
      mine = q.waiter.position;
  }
  std::vector<lock::Waiter> earlier;
  for (const auto& q : m_waiters) {
    if (q.waiter.ns == claim.ns && q.waiter.position < mine)
      earlier.push_back(q.waiter);
  }
  return earlier;
}

// Who a queued claim waits for: the holders and earlier waiters in its way.
std::vector<lock::OwnerId> Reference::blockers(const lock::Claim& claim) const {
  std::vector<lock::OwnerId> owners;
  auto decision = lock::decide(claim, live_leases(), earlier_waiters(claim));
  for (const auto& lease : decision.blocking_leases)
    owners.push_back(lease.owner);
  for (const auto& waiter : decision.blocking_waiters)
    owners.push_back(waiter.owner);
  return owners;
}

Reference::Held* Reference::find(const std::string& ns, const std::string& resource,
                                 const lock::OwnerId& owner) {
  for (auto& held : m_leases) {
    if (held.lease.ns == ns && held.lease.resource.str() == resource && held.lease.owner == owner)
      return &held;
  }
  return nullptr;
}

bool Reference::holds_or_waits(const lock::OwnerId& owner) const {
  for (const auto& held : m_leases) {
    if (!held.expired && held.lease.owner == owner)
      return true;
  }
  return std::any_of(m_waiters.begin(), m_waiters.end(),
                     [&](const Queued& q) { return q.waiter.owner == owner; });
}

// Follows "waits for" edges (a queued request to the owners in its way) from
// the owners in the requester's way; reaching the requester closes a cycle.
bool Reference::closes_cycle(const lock::OwnerId& requester,
                             const std::vector<lock::OwnerId>& first) const {
  std::vector<lock::OwnerId> frontier = first;
  std::set<lock::OwnerId> visited;
  while (!frontier.empty()) {
    lock::OwnerId owner = frontier.back();
    frontier.pop_back();
    if (!visited.insert(owner).second)
      continue;
    for (const auto& q : m_waiters) {
      if (q.waiter.owner != owner)
        continue;
      for (const auto& next : blockers(lock::claim_of(q.waiter))) {
        if (next == requester)
          return true;
        frontier.push_back(next);
      }
    }
  }
  return false;
}

// Queued requests try again in queue order until none can go, as woken
// waiters do; a grant can unblock nobody earlier, so one pass would do, but
// the loop states the rule rather than relying on it.
void Reference::wake_waiters(StepResult& result) {
  for (bool woke = true; woke;) {
    woke = false;
    std::set<int> tried;
    for (std::size_t i = 0; i < m_waiters.size() && !woke; ++i) {
      int step = m_waiters[i].step;
      if (!tried.insert(step).second)
        continue;
      Step request = m_waiters[i].request;
      Attempt attempt = this->attempt(step, request, true, false);
      if (attempt.outcome == Attempt::granted || attempt.outcome == Attempt::usage) {
        int exit = attempt.outcome == Attempt::granted ? 0 : 64;
        if (exit != 0)
          dequeue(request, lock::canonical_resources(request.resources));
        result.woken.push_back({step, exit, attempt.tokens});
        woke = true;
      }
    }
  }
}

std::vector<std::string> Reference::queue() const {
  std::vector<std::string> lines;
  for (const auto& q : m_waiters) {
    lines.push_back("ns" + std::to_string(q.request.ns) + " o" + std::to_string(q.owner) + " " +
                    q.waiter.resource.str() + " " + std::string(lock::to_string(q.waiter.mode)) +
                    (q.waiter.slots ? " slots " + std::to_string(q.waiter.slots) : ""));
  }
  return lines;
}

std::vector<Reference::Holding> Reference::live(int ns) const {
  std::vector<Holding> live;
  for (const auto& held : m_leases) {
    if (!held.expired && held.lease.ns == m_namespaces.at(ns)) {
      auto owner = std::find(m_owners.begin(), m_owners.end(), held.lease.owner.str());
      live.push_back({static_cast<int>(owner - m_owners.begin()), ns, held.lease.resource.str()});
    }
  }
  return live;
}

std::vector<Reference::Wait> Reference::waits() const {
  std::vector<Wait> waits;
  std::set<int> seen;
  for (const auto& q : m_waiters) {
    if (seen.insert(q.step).second)
      waits.push_back({q.owner, q.request.ns, q.request.resources});
  }
  return waits;
}

}  // namespace clk::test::model
