// What every subcommand shares: the global flags, the resolved settings, and
// helpers that turn flags into library values (with exit-64 errors).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "config/settings.hpp"
#include "lock/owner.hpp"
#include "output/render.hpp"
#include "store/store.hpp"
#include "store/store_options.hpp"

namespace clk::cmd {

struct Context {
  config::Flags flags;
  int verbosity = 0;  // -v count
  bool quiet = false;
  config::Settings settings;  // resolved after parsing, before the action runs
  // Everything after the first `--`: the command of `clock run`, passed on
  // untouched (flags and all), so CLI11 never sees it.
  std::vector<std::string> command;

  // How to reach the database the settings name.
  store::StoreOptions store_options() const;
  std::unique_ptr<store::Store> open_store() const;
  // The owner (ID.SECRET) from --owner/CLOCK_OWNER, else a new random id and
  // secret; throws usage for an id without its secret, which cannot acquire.
  lock::OwnerCredential owner_or_new() const;
  // The owner from --owner/CLOCK_OWNER, ID or ID.SECRET (the store refuses a
  // lease's renewal or release without its secret); throws usage if none.
  lock::OwnerCredential required_owner(const std::string& command) const;
};

// A subcommand's work, run after parsing; returns the exit status.
using Action = std::function<int(Context&)>;

// Parses a duration flag value; throws clk::Error(usage) naming the flag.
std::chrono::milliseconds duration_flag(const std::string& flag, const std::string& value);

// The lease TTL of --ttl `flag`, else the config's lock.ttl (built-in 90s).
// Past lock::k_max_ttl it throws usage for the flag, config for the file's
// value, naming the cap; 0 (no expiry) and past lock::k_long_ttl warn.
std::chrono::milliseconds lease_ttl(const Context& context, const std::optional<std::string>& flag);

// Facts about the process that holds a lock: for `run` this process and the
// wrapped command; for `acquire` the calling script (the parent process),
// since clock itself exits at once. Passwords and owner secrets in the
// command line are masked.
lock::OwnerInfo owner_info_for_run(const std::vector<std::string>& command);
lock::OwnerInfo owner_info_for_caller();

// This process as the caller of a renew or release: user, host, pid and
// its lineage, recorded in history when it is not the holder's own tree.
store::Caller this_caller();

// Parses an output format flag against the ones a command allows.
output::Format format_flag(const std::string& value, std::initializer_list<output::Format> allowed);

// Writes to stdout (the only place that does).
void print(const std::string& text);

}  // namespace clk::cmd
