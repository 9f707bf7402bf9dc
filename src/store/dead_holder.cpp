// Judging, on this host, that a lease's holder is gone (dead_holder.hpp).
#include "store/dead_holder.hpp"

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "error.hpp"
#include "lock/limits.hpp"
#include "util/process_group.hpp"
#include "util/process_identity.hpp"

namespace clk::store {

namespace {

// This host as the traces name it, read once: the boot and the pid namespace
// are this process's for its whole life.
struct HostView {
  std::string boot_id;
  std::int64_t pid_ns = 0;
};

const std::optional<HostView>& this_host() {
  static const std::optional<HostView> view = []() -> std::optional<HostView> {
    auto boot = util::boot_id();
    auto ns = util::pid_namespace();
    if (!boot || !ns)
      return std::nullopt;
    return HostView{*boot, *ns};
  }();
  return view;
}

// Another user's processes may be hidden from this one (/proc mounted with
// hidepid) and its cgroup unreadable, and it could not end them either: only
// the holder's own user, or root, judges.
bool may_judge(const LockRequest& request, const lock::Lease& lease) {
  return ::geteuid() == 0 || (!request.info.user.empty() && request.info.user == lease.info.user);
}

enum class Verdict { gone, clock_runs, job_runs, unknown };

Verdict judge(const HolderTrace& trace) {
  switch (util::process_presence(static_cast<pid_t>(trace.pid), trace.pid_start)) {
    case util::Presence::running:
      return Verdict::clock_runs;
    case util::Presence::unknown:
      return Verdict::unknown;
    case util::Presence::gone:
      break;
  }
  if (trace.job_group > 0) {
    auto members = util::process_group_has_members(static_cast<pid_t>(trace.job_group), -1);
    if (!members)
      return Verdict::unknown;
    if (*members)
      return Verdict::job_runs;
  }
  if (!trace.job_cgroup.empty()) {
    auto busy = util::cgroup_has_processes(trace.job_cgroup);
    if (!busy)
      return Verdict::unknown;
    if (*busy)
      return Verdict::job_runs;
  }
  return Verdict::gone;
}

std::string pid_text(const HolderTrace& trace) {
  return "pid " + std::to_string(trace.pid);
}

}  // namespace

DeadHolders* dead_holders_of(Store& store) {
  return dynamic_cast<DeadHolders*>(&store);
}

std::string holder_died_by(const Caller& claimer) {
  return lock::bounded(describe(claimer) + " (holder died)", lock::k_max_by_bytes);
}

std::optional<HolderTrace> this_holder(pid_t job_group, const std::string& job_cgroup) {
  const auto& host = this_host();
  auto started = util::process_start_ticks(::getpid());
  if (!host || !started)
    return std::nullopt;
  return HolderTrace{
      host->boot_id, host->pid_ns, ::getpid(), *started, job_group > 0 ? job_group : 0, job_cgroup};
}

// The trace of `lease` read at the previous look, when its holder still
// runs here; otherwise the server's, as it is now.
std::optional<HolderTrace> DeadHolderWatch::trace_of(DeadHolders& holders,
                                                     const lock::Lease& lease) {
  const auto& host = this_host();
  for (const auto& seen : m_seen) {
    if (seen.token == lease.token && seen.owner == lease.owner.str() &&
        seen.resource == lease.resource.str() && seen.ns == lease.ns &&
        judge(seen.trace) == Verdict::clock_runs)
      return seen.trace;
  }
  auto trace = holders.holder_trace(lease.ns, lease.resource, lease.owner, lease.token,
                                    host->boot_id, host->pid_ns);
  if (!trace || trace->boot_id != host->boot_id || trace->pid_ns != host->pid_ns)
    return std::nullopt;
  return trace;
}

DeadHolderReport DeadHolderWatch::end_dead_holders(Store& store, const LockRequest& request,
                                                   const Attempt& attempt) {
  DeadHolderReport report;
  auto* holders = dead_holders_of(store);
  if (!this_host() || !holders)
    return report;
  std::vector<Seen> seen;
  for (std::size_t i = 0; i < attempt.blocking_leases.size(); ++i) {
    const auto& lease = attempt.blocking_leases[i];
    // The host name is a cheap first sieve; the trace decides.
    if (lease.info.host != request.info.host || !may_judge(request, lease))
      continue;
    std::string found;
    try {
      auto trace = trace_of(*holders, lease);
      if (!trace)
        continue;
      seen.push_back({lease.ns, lease.resource.str(), lease.owner.str(), lease.token, *trace});
      switch (judge(*trace)) {
        case Verdict::clock_runs:
        case Verdict::unknown:
          break;
        case Verdict::job_runs:
          found = pid_text(*trace) + " is not running here, but its job still is";
          break;
        case Verdict::gone: {
          found = pid_text(*trace) + " is not running here, nor its job";
          DeadHolderClaim claim{
              lease.ns,    lease.resource,
              lease.owner, lease.token,
              *trace,      Caller{request.info.user, request.info.host, request.info.pid, {}}};
          if (holders->end_dead_lease(claim)) {
            spdlog::info("{} of owner {} (token {}): its holder died ({}); ended as expired",
                         lease.resource.str(), lease.owner.str(), lease.token, found);
            ++report.ended;
          }
          break;
        }
      }
    } catch (const Error& error) {
      spdlog::debug("could not look at the holder of {}: {}", lease.resource.str(), error.what());
    }
    if (i == 0)
      report.first_found = found;
  }
  m_seen = std::move(seen);
  return report;
}

}  // namespace clk::store
