// The compatibility rules of man clock, DESCRIPTION, as pure functions: which claims on the
// lock table conflict, and whether a request may be granted now given the
// related leases and the earlier waiters. Both stores decide the same way; the
// PostgreSQL functions in sql/postgres mirror this file.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lock/lease.hpp"

namespace clk::lock {

// A request, a lease or a waiter, reduced to what compatibility depends on.
struct Claim {
  std::string ns;
  Resource resource;
  OwnerId owner;
  Mode mode = Mode::exclusive;
  int slots = 0;
};

Claim claim_of(const Lease& lease);
Claim claim_of(const Waiter& waiter);

// Two claims conflict when they are in one namespace, on related resources
// (equal, or ancestor and descendant), held by different owners, and not
// both shared. Semaphore holders of the same resource do not conflict
// pairwise: their number is checked by decide().
bool conflicts(const Claim& a, const Claim& b);

enum class Verdict {
  grant,           // nothing stands in the way
  reenter,         // the owner already holds this resource: count up, keep the token
  blocked,         // a live lease or an earlier waiter stands in the way
  slots_mismatch,  // a semaphore holder or waiter named another slot count
  upgrade,         // the owner holds it shared and asks for exclusive
};

struct Decision {
  Verdict verdict = Verdict::grant;
  std::vector<Lease> blocking_leases;  // for `blocked`: who holds what is in the way
  std::vector<Waiter> blocking_waiters;
  int other_slots = 0;  // for `slots_mismatch`: the count the others use
};

// Decides one resource of a request. `leases` are the live leases on related
// resources (any owner, this one included); `earlier_waiters` are live waiters
// on related resources queued before this request (the request's own entry
// excluded). A request never overtakes an earlier conflicting waiter.
Decision decide(const Claim& request, const std::vector<Lease>& leases,
                const std::vector<Waiter>& earlier_waiters);

}  // namespace clk::lock
