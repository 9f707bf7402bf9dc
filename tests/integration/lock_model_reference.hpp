// The reference player of the differential test: the lock model of man clock, DESCRIPTION
// and §5 as a few containers in memory (leases, a queue, one token counter),
// deciding each resource of a request with clk::lock::decide, as both stores
// do. It knows no clocks: a lease taken with a short TTL expires when the
// sequence says that time passes.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lock/conflict.hpp"

namespace clk::test::model {

enum class Op {
  acquire,      // acquire -n
  wait,         // acquire -w in the background: granted now, queued, or deadlock
  release,      // release by the owner
  renew,        // renew by the owner (default TTL)
  force,        // release --force
  time_passes,  // every short-TTL lease expires
};

struct Step {
  Op op = Op::acquire;
  int owner = 0;                       // index into the sequence's owners
  int ns = 0;                          // index into the sequence's namespaces
  std::vector<std::string> resources;  // acquire and wait may name several
  lock::Mode mode = lock::Mode::exclusive;
  int slots = 0;
  bool short_ttl = false;  // acquire --ttl of a second, expired by the next time_passes
};

// What one step did, before normalisation: tokens are the store's own.
struct StepResult {
  std::optional<int> exit;          // none: a background waiter that is queued
  std::vector<lock::Token> tokens;  // granted, in canonical resource order
  std::vector<std::string> events;  // "kind resource owner", as recorded
  struct Woken {
    int step = 0;  // the wait step whose waiter finished during this step
    int exit = 0;
    std::vector<lock::Token> tokens;
  };
  std::vector<Woken> woken;
  std::vector<std::string> queue;  // "ns owner resource mode" in queue order
};

class Reference {
 public:
  Reference(std::vector<std::string> namespaces, std::vector<std::string> owners)
      : m_namespaces(std::move(namespaces)), m_owners(std::move(owners)) {}

  // Plays step number `index`, then lets every queued waiter that may now go
  // take its grant, as a woken waiter does before the next step.
  StepResult play(int index, const Step& step);

  // True while the wait step `index` is queued (the generator uses it).
  bool queued(int index) const {
    return std::any_of(m_waiters.begin(), m_waiters.end(),
                       [&](const Queued& q) { return q.step == index; });
  }
  bool owner_queued(int owner) const {
    return std::any_of(m_waiters.begin(), m_waiters.end(),
                       [&](const Queued& q) { return q.owner == owner; });
  }
  bool anyone_queued() const { return !m_waiters.empty(); }
  // What the generator aims at: live leases, and what queued requests wait for.
  struct Holding {
    int owner, ns;
    std::string resource;
  };
  std::vector<Holding> live(int ns) const;
  struct Wait {
    int owner, ns;
    std::vector<std::string> resources;
  };
  std::vector<Wait> waits() const;

 private:
  struct Held {
    lock::Lease lease;
    bool short_ttl = false;
    bool expired = false;
  };
  struct Queued {  // one entry per resource of a waiting request
    lock::Waiter waiter;
    int step = 0;  // the wait step that queued it
    int owner = 0;
    Step request;
  };

  lock::OwnerId id(int owner) const { return lock::OwnerId::trusted(m_owners.at(owner)); }
  // History events read "kind nsN resource oN", as the test normalises them.
  void record(const std::string& kind, const lock::Lease& lease) {
    std::string where =
        ns_index(lease.ns) + " " + lease.resource.str() + " " + owner_index(lease.owner);
    if (kind == "acquired")
      m_acquired.insert(where);
    m_events->push_back(kind + " " + where);
  }
  std::string ns_index(const std::string& ns) const {
    auto found = std::find(m_namespaces.begin(), m_namespaces.end(), ns);
    return "ns" + std::to_string(found - m_namespaces.begin());
  }
  std::string owner_index(const lock::OwnerId& owner) const {
    auto found = std::find(m_owners.begin(), m_owners.end(), owner.str());
    return "o" + std::to_string(found - m_owners.begin());
  }

  struct Attempt {
    enum { granted, blocked, deadlock, usage } outcome = granted;
    std::vector<lock::Token> tokens;
  };
  Attempt attempt(int index, const Step& step, bool queue, bool first);
  void grant(const Step& step, const std::vector<lock::Resource>& resources,
             const std::vector<lock::Verdict>& verdicts, Attempt& result);
  void enqueue(int index, const Step& step, const std::vector<lock::Resource>& resources);
  void dequeue(const Step& step, const std::vector<lock::Resource>& resources);
  int release(const Step& step);
  int renew(const Step& step);
  int force(const Step& step);
  void expire_short_leases();
  void expire_related(const std::string& ns, const lock::Resource& resource);
  std::vector<lock::Lease> live_leases() const;
  std::vector<lock::Waiter> earlier_waiters(const lock::Claim& claim) const;
  std::vector<lock::OwnerId> blockers(const lock::Claim& claim) const;
  Held* find(const std::string& ns, const std::string& resource, const lock::OwnerId& owner);
  bool holds_or_waits(const lock::OwnerId& owner) const;
  bool closes_cycle(const lock::OwnerId& requester, const std::vector<lock::OwnerId>& first) const;
  void wake_waiters(StepResult& result);
  std::vector<std::string> queue() const;

  std::vector<std::string> m_namespaces, m_owners;
  std::vector<Held> m_leases;
  std::vector<Queued> m_waiters;  // in queue order
  lock::Token m_last_token = 0;
  std::int64_t m_last_position = 0;
  std::vector<std::string>* m_events = nullptr;
  // "nsN resource oN" of every grant: a renewal that finds its lease gone
  // records it as lost only where its owner held it (man clock, DESCRIPTION: nothing is
  // recorded in an owner's name without its proof).
  std::set<std::string> m_acquired;
};

}  // namespace clk::test::model
