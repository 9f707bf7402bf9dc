// The JSON replies of the SQL functions of sql/postgres (jsonb) and of the
// procedures of sql/mariadb (the same JSON as text), instants in
// microseconds since the Unix epoch, as the Store's types. A reply that does
// not parse is a bug: clk::Error(internal).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "store/dead_holder.hpp"
#include "store/store.hpp"

namespace clk::store {

// try_acquire(): the attempt, or the lock model's refusal.
struct AcquireReply {
  Attempt attempt;
  std::optional<Refused> refused;  // slots_mismatch or upgrade
  // blocked: how long, on the server's clock, until the first lease or queue
  // entry in the way expires (none: nothing in the way ever expires).
  std::optional<std::chrono::microseconds> next_expiry_in;
  // blocked: how many waiters are ahead of the caller: the fast paths count
  // the live queue entries ahead of its one resource, up to 64, and list
  // only the first; the general path lists every entry in the way, one per
  // resource of each waiter, and its waiters are counted by owner.
  int ahead = 0;
  // blocked, from the fast paths: the position of the caller's own queue
  // entry (with the first entry ahead's, how far back it is, uncounted).
  std::optional<std::int64_t> mine;
};
AcquireReply parse_acquire(const std::string& json);

// renew() and note_leftovers(): empty when done, else the resources lost
// (gone, expired, other_token) or not proven.
std::vector<Refused> parse_renew(const std::string& json);

// release() and force_release().
struct ReleaseReply {
  std::vector<Released> released;
  std::vector<Refused> refused;  // release(): expired, other_owner, not_held
};
ReleaseReply parse_release(const std::string& json);

// history() and history2(): the exit of a run (exit_code, exit_signal) where
// the reply has it.
std::vector<HistoryEvent> parse_history(const std::string& json);
// run_results(): each resource's run results.
std::vector<RunResults> parse_run_results(const std::string& json);
GcReport parse_gc(const std::string& json);
// holder_trace(): the trace recorded on a lease; none for null or "".
std::optional<HolderTrace> parse_holder_trace(const std::string& json);
// try_acquire()'s p_holder: {"boot_id", "pid_ns", "pid_start", "job_group",
// "job_cgroup"} (the lease's pid is the request's), or none.
std::optional<std::string> holder_trace_json(const std::optional<HolderTrace>& trace);

}  // namespace clk::store
