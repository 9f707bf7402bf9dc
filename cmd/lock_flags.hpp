// The flags `clock acquire` and `clock run` share, and the acquire step
// they both perform (wait policy, progress on stderr, interrupts).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cmd/context.hpp"
#include "error.hpp"
#include "store/waiting.hpp"

namespace clk::cmd {

struct LockFlags {
  std::vector<std::string> resources;
  std::optional<std::string> owner;
  std::optional<std::string> ttl;
  bool shared = false;
  bool exclusive = false;
  int slots = 0;
  bool nonblock = false;
  std::optional<std::string> wait;
  std::optional<std::string> db_patience;
  std::optional<int> conflict_exit_code;
};

void add_lock_flags(CLI::App& command, LockFlags& flags);

struct LockPlan {
  lock::OwnerCredential owner;  // what CLOCK_OWNER carries: request.owner and .secret
  store::LockRequest request;
  store::WaitPolicy policy;
};

// Validates the flags (exit 64 on bad input) and builds the request.
LockPlan plan_lock(Context& context, const LockFlags& flags, lock::OwnerInfo info);

// Acquires per the plan, reporting waits on stderr. On a conflict or timeout
// throws clk::Error(not_acquired), which the caller maps to -E's code.
store::Acquired take_locks(Context& context, store::Store& store, const LockPlan& plan);

// The exit status for a not_acquired error: -E N if given, else 75.
int conflict_status(const LockFlags& flags);

// Reports a not_acquired error and returns conflict_status(flags): an error
// line, except where the refusal is the asked-for outcome (man clock, COMMANDS): with -E,
// and with -n when stderr is not a terminal (cron: as flock -n), it is an
// info line, which -v shows.
int report_refusal(const Context& context, const LockFlags& flags, const Error& refusal);

}  // namespace clk::cmd
