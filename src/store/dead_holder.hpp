// The dead-holder rule (docs/dead-holder.md, clock(1) "Lease"): a lease
// whose holder died on this host is ended at once by the next request from
// this host, instead of blocking it for the rest of its TTL. The database
// cannot see processes, so this host judges; the store records what it
// judges by and ends only the lease judged (DeadHolders::end_dead_lease).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

#include "store/store.hpp"

namespace clk::store {

// A claim that a lease's holder died on the claimer's host: the lease by
// its identity and token, the trace its holder recorded as the claimer read
// it (the store ends the lease only while both still match, so a newer
// holder's lease is never ended), and who claims, for history.
struct DeadHolderClaim {
  std::string ns;
  lock::Resource resource;
  lock::OwnerId owner;
  lock::Token token = 0;
  HolderTrace trace;
  Caller caller;
};

// What a store offers for the rule; every store of clock has it
// (dead_holders_of()).
class DeadHolders {
 public:
  virtual ~DeadHolders() = default;

  // The trace recorded on the live lease of `owner` on `resource` under
  // `token`, when it names the boot `boot_id` and pid namespace `pid_ns`
  // (the caller's own); none otherwise. The boot id, which only that host
  // can read, is what lets a caller see a trace (docs/threat-model.md).
  virtual std::optional<HolderTrace> holder_trace(const std::string& ns,
                                                  const lock::Resource& resource,
                                                  const lock::OwnerId& owner, lock::Token token,
                                                  const std::string& boot_id,
                                                  std::int64_t pid_ns) = 0;

  // Ends the claimed lease, recorded as expired with `by`
  // holder_died_by(claimer), and wakes its waiters, when it is still there
  // under the claimed token with the claimed boot id, pid namespace, pid and
  // start time: true. Otherwise nothing changes: false.
  virtual bool end_dead_lease(const DeadHolderClaim& claim) = 0;
};

// The store's DeadHolders; none for a store without them.
DeadHolders* dead_holders_of(Store& store);

// "user@host pid N (holder died)": the `by` of the expiry of a
// lease ended by end_dead_lease().
std::string holder_died_by(const Caller& claimer);

// What clock run records on its leases: this process, its job's process
// group and cgroup ("": none). None where this host's processes cannot be
// judged (no boot id, or a /proc of another pid namespace).
std::optional<HolderTrace> this_holder(pid_t job_group, const std::string& job_cgroup);

struct DeadHolderReport {
  int ended = 0;  // leases ended
  // What this host found of the first lease in the way's holder, when it
  // could look ("pid 7775 is not running here, but its job still is"): for
  // the refusal's message. "" when it could not.
  std::string first_found;
};

// One request's look at the holders in its way, attempt after attempt.
class DeadHolderWatch {
 public:
  // After a blocked attempt: looks at each lease in the way whose holder
  // ran on this host (the same boot id and pid namespace), as this user or
  // with this process root, and ends each one with no process left
  // (clock's pid with its start time gone, its job's group and cgroup
  // empty) as an expiry. A store that cannot be asked ends none (the
  // refusal stands).
  DeadHolderReport end_dead_holders(Store& store, const LockRequest& request,
                                    const Attempt& attempt);

 private:
  struct Seen {
    std::string ns, resource, owner;
    lock::Token token = 0;
    HolderTrace trace;
  };
  std::optional<HolderTrace> trace_of(DeadHolders& holders, const lock::Lease& lease);

  // The traces read at the previous look, of the leases then in the way. A
  // lease's trace is written once (when its holder's command starts), so
  // while its holder still runs here a waiter that looks again every few
  // milliseconds asks the server nothing; once it does not, the trace is
  // read again before anything is ended.
  std::vector<Seen> m_seen;
};

}  // namespace clk::store
