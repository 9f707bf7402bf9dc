// Shared acquire flags and the acquire step.
#include "cmd/lock_flags.hpp"

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "error.hpp"
#include "output/wait_reporter.hpp"
#include "util/duration.hpp"
#include "util/process_facts.hpp"
#include "util/signal_flag.hpp"

namespace clk::cmd {

void add_lock_flags(CLI::App& command, LockFlags& flags) {
  command
      .add_option("-r,--resource", flags.resources,
                  "Resource to lock (repeatable, up to " +
                      std::to_string(lock::k_max_resources_per_call) + ": all or none)")
      ->required()
      ->take_all();
  command.add_option("--owner", flags.owner,
                     "Owner ID (default: $CLOCK_OWNER, else a new one); its secret comes from "
                     "CLOCK_OWNER=ID.SECRET, the preferred form. --owner ID.SECRET works too, "
                     "but shows in ps until clock blanks it as it starts");
  command.add_option(
      "--ttl", flags.ttl,
      "Lease time-to-live (default: lock.ttl of the config file, else " +
          std::to_string(
              std::chrono::duration_cast<std::chrono::seconds>(lock::k_default_ttl).count()) +
          "s); at most " + util::format_duration(lock::k_max_ttl) + " (a warning past " +
          util::format_duration(lock::k_long_ttl) + "); 0 = never expires");
  auto* shared = command.add_flag("-s,--shared", flags.shared, "Shared lock");
  auto* exclusive = command.add_flag("-x,--exclusive", flags.exclusive, "Exclusive lock (default)");
  shared->excludes(exclusive);
  command.add_option("--slots", flags.slots, "Counting semaphore: up to N holders")
      ->check(CLI::Range(1, 1'000'000));
  auto* nonblock = command.add_flag(
      "-n,--nonblock", flags.nonblock,
      "Do not wait if held: exit 75 (or -E's code); silent, as flock -n, when stderr is not a "
      "terminal (cron), the skip still in history; -v says why");
  auto* wait = command.add_option(
      "-w,--wait", flags.wait,
      "Wait at most D (default: forever). While waiting, stderr names the holder: "
      "one live line on a terminal; elsewhere (cron) nothing unless the wait passes 1m "
      "(-v: a line after 1s, then every 30s)");
  nonblock->excludes(wait);
  command.add_option("--db-patience", flags.db_patience,
                     "Without -w: give up (exit 69, /fail with --ping) once the database has been "
                     "unreachable for D (default: database_patience of the config file, else "
                     "5m); 'forever' to keep trying. A held lock is still waited for");
  command
      .add_option("-E,--conflict-exit-code", flags.conflict_exit_code,
                  "Exit code when not acquired (default 75); the refusal is then expected: "
                  "nothing on stderr unless -v")
      ->check(CLI::Range(0, 255));
}

LockPlan plan_lock(Context& context, const LockFlags& flags, lock::OwnerInfo info) {
  config::apply_owner_flag(context.settings, flags.owner);
  LockPlan plan;
  auto& request = plan.request;
  request.ns = context.settings.ns;
  request.resources = lock::canonical_resources(flags.resources);
  request.mode = flags.shared ? lock::Mode::shared : lock::Mode::exclusive;
  request.slots = flags.slots;
  plan.owner = context.owner_or_new();
  request.owner = plan.owner.id;
  request.secret = plan.owner.secret;
  request.info = std::move(info);
  request.ttl = lease_ttl(context, flags.ttl);
  request.request_id = util::random_uuid();
  if (request.slots > 0 && request.mode == lock::Mode::shared) {
    throw Error(ExitCode::usage,
                "--slots and --shared do not combine: semaphore holders count "
                "as exclusive toward related resources");
  }
  plan.policy.nonblock = flags.nonblock;
  if (flags.wait)
    plan.policy.max_wait = duration_flag("--wait", *flags.wait);
  plan.policy.database_patience = context.settings.database_patience;
  if (flags.db_patience) {
    auto patience = config::parse_patience(*flags.db_patience);
    if (!patience) {
      throw Error(ExitCode::usage, "invalid duration '" + *flags.db_patience +
                                       "' for --db-patience: use 30s, 5m, 1h, plain seconds or "
                                       "forever");
    }
    plan.policy.database_patience = *patience;
  }
  return plan;
}

store::Acquired take_locks(Context& context, store::Store& store, const LockPlan& plan) {
  output::WaitReporter reporter(context.quiet           ? output::WaitVerbosity::quiet
                                : context.verbosity > 0 ? output::WaitVerbosity::verbose
                                                        : output::WaitVerbosity::normal);
  util::SignalFlag signals;
  try {
    return store::acquire(store, plan.request, plan.policy, &reporter,
                          [&] { return signals.caught() != 0; });
  } catch (const Error& error) {
    if (signals.caught())
      signals.die_of_caught_signal();
    throw;
  }
}

int conflict_status(const LockFlags& flags) {
  return flags.conflict_exit_code.value_or(exit_status(ExitCode::not_acquired));
}

// With -E the caller said a refusal is a normal outcome (flock -n -E 0 is
// silent too): cron must not mail it, -v still shows it. So is -n off a
// terminal: a crontab line moved from flock -n must not mail every skip.
// A -w that timed out is not asked for: it says so, as before.
int report_refusal(const Context& context, const LockFlags& flags, const Error& refusal) {
  bool quiet_skip = flags.nonblock && context.verbosity == 0 && isatty(STDERR_FILENO) != 1;
  if (flags.conflict_exit_code || quiet_skip)
    spdlog::info("{}", refusal.what());
  else
    spdlog::error("{}", refusal.what());
  return conflict_status(flags);
}

}  // namespace clk::cmd
