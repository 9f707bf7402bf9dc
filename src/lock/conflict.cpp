// Compatibility of claims and the grant decision for one resource.
#include "lock/conflict.hpp"

namespace clk::lock {

Claim claim_of(const Lease& lease) {
  return {lease.ns, lease.resource, lease.owner, lease.mode, lease.slots};
}

Claim claim_of(const Waiter& waiter) {
  return {waiter.ns, waiter.resource, waiter.owner, waiter.mode, waiter.slots};
}

namespace {

bool same_semaphore(const Claim& a, const Claim& b) {
  return a.slots > 0 && b.slots > 0 && a.resource == b.resource;
}

}  // namespace

bool conflicts(const Claim& a, const Claim& b) {
  if (a.ns != b.ns || a.owner == b.owner || !a.resource.is_related_to(b.resource))
    return false;
  if (same_semaphore(a, b))
    return false;
  return !(a.mode == Mode::shared && b.mode == Mode::shared);
}

Decision decide(const Claim& request, const std::vector<Lease>& leases,
                const std::vector<Waiter>& earlier_waiters) {
  Decision decision;
  std::vector<Lease> semaphore_holders;  // other owners' slots of this very semaphore
  for (const auto& lease : leases) {
    Claim held = claim_of(lease);
    if (held.ns != request.ns)
      continue;
    if (held.owner == request.owner && held.resource == request.resource) {
      if (held.slots != request.slots) {
        return {Verdict::slots_mismatch, {}, {}, held.slots};
      }
      if (held.mode == Mode::shared && request.mode == Mode::exclusive) {
        return {Verdict::upgrade, {lease}, {}, 0};
      }
      return {Verdict::reenter, {}, {}, 0};
    }
    if (same_semaphore(held, request)) {
      if (held.slots != request.slots)
        return {Verdict::slots_mismatch, {}, {}, held.slots};
      semaphore_holders.push_back(lease);
      continue;
    }
    if (conflicts(held, request))
      decision.blocking_leases.push_back(lease);
  }
  int holders = static_cast<int>(semaphore_holders.size());
  if (request.slots > 0 && holders >= request.slots) {
    decision.blocking_leases.insert(decision.blocking_leases.end(), semaphore_holders.begin(),
                                    semaphore_holders.end());
  }
  int semaphore_waiters = 0;
  for (const auto& waiter : earlier_waiters) {
    Claim queued = claim_of(waiter);
    if (queued.owner == request.owner)
      continue;
    if (same_semaphore(queued, request)) {
      if (queued.slots != request.slots)
        return {Verdict::slots_mismatch, {}, {}, queued.slots};
      // Earlier semaphore waiters go first: only the slots left over are ours.
      if (holders + ++semaphore_waiters >= request.slots) {
        decision.blocking_waiters.push_back(waiter);
      }
      continue;
    }
    if (conflicts(queued, request))
      decision.blocking_waiters.push_back(waiter);
  }
  bool blocked = !decision.blocking_leases.empty() || !decision.blocking_waiters.empty();
  decision.verdict = blocked ? Verdict::blocked : Verdict::grant;
  return decision;
}

}  // namespace clk::lock
