// clock run: acquire, run the command as a supervised child while renewing
// the lease, release when it exits, and exit with its status.
#include <algorithm>
#include <random>
#include <thread>

#include <spdlog/spdlog.h>

#include "cmd/commands.hpp"
#include "cmd/lock_flags.hpp"
#include "error.hpp"
#include "output/text.hpp"
#include "run/supervise.hpp"
#include "run/timing.hpp"
#include "util/duration.hpp"
#include "util/quick_exit.hpp"
#include "util/random_seed.hpp"
#include "util/signal_flag.hpp"

namespace clk::cmd {

namespace {

std::string joined_tokens(const std::vector<store::Grant>& grants) {
  std::string out;
  for (const auto& grant : grants)
    out += (out.empty() ? "" : ",") + std::to_string(grant.token);
  return out;
}

// The leases the heartbeat keeps: every resource, under the tokens granted.
// Without the caller: keep_lease() adds it (its lineage is read while the
// command runs, not between the grant and the command's start).
store::RenewRequest held_leases(const LockPlan& plan, const std::vector<store::Grant>& grants) {
  store::RenewRequest held;
  held.ns = plan.request.ns;
  held.resources = plan.request.resources;
  held.owner = plan.request.owner;
  held.secret = plan.request.secret;
  held.ttl = plan.request.ttl;
  for (const auto& grant : grants)
    held.tokens.push_back(grant.token);
  return held;
}

// The heartbeat's calls: renew every resource keeping the tokens, and, where
// the store can tell cheaply, check between renewals that they are still
// held, and give the connection back between renewals. All run on the
// supervisor's heartbeat thread, the only user of
// `store` while the child runs; their errors are the heartbeat's to report.
run::LeaseKeeping keep_lease(store::Store& store, const store::RenewRequest& held) {
  run::LeaseKeeping keeping;
  keeping.renew = [&store, held] {
    auto request = held;
    request.caller = this_caller();
    store.renew(request);
    return run::RenewOutcome::renewed;
  };
  keeping.check_interval = store.still_holds_interval();
  if (keeping.check_interval)
    keeping.still_holds = [&store, held] { return store.still_holds(held); };
  keeping.rest_after = store.idle_limit();
  if (keeping.rest_after)
    keeping.rest = [&store] { store.rest(); };
  return keeping;
}

// The steady-clock instant `at` on the wall clock, for messages.
std::string wall_clock(std::chrono::steady_clock::time_point at) {
  auto ago = std::chrono::steady_clock::now() - at;
  return output::iso8601(std::chrono::time_point_cast<std::chrono::system_clock::duration>(
      std::chrono::system_clock::now() - ago));
}

// Releases after the command; a lease found lost then means the command ran
// unprotected for part of its run: exit 79 (SPEC §4), saying since when.
// A run stopped at its --max-runtime is history (`killed`). Failing to write
// it changes nothing for the caller (exit 124 either way): a warning.
void record_killed(store::Store& store, const store::LockRequest& request) {
  try {
    store.record_missed_run(request, store::EventKind::killed, std::nullopt);
  } catch (const Error& error) {
    spdlog::warn("could not record the killed run in history: {}", error.what());
  }
}

int release_after_run(store::Store& store, const LockPlan& plan,
                      const std::vector<store::Grant>& grants, const run::RunEnd& end) {
  store::ReleaseRequest release;
  release.ns = plan.request.ns;
  release.resources = plan.request.resources;
  release.owner = plan.request.owner;
  // A run counts for --once-per when its command exited 0 and its lease is
  // still held at the release (a lost run does not count: the store refuses).
  release.succeeded = end.status == 0 && !end.stopped_for_lost_lease;
  release.secret = plan.request.secret;
  release.caller = this_caller();
  // What it holds, so that a release whose reply a failover lost is looked
  // up and sent again rather than left to expire (store.hpp).
  for (const auto& grant : grants) {
    release.tokens.push_back(grant.token);
    release.depths.push_back(grant.depth);
  }
  // Renewed no later than last_held, so it lapses by then + TTL (the margin
  // covers the renewal's own round trip).
  if (plan.request.ttl > std::chrono::milliseconds(0))
    release.expires_by = end.last_held + plan.request.ttl + std::chrono::seconds(1);
  try {
    store.release(release);
  } catch (const Error& error) {
    if (end.stopped_for_lost_lease)
      return end.status;  // already reported
    if (error.code() != ExitCode::not_owner) {
      spdlog::warn("releasing after the command: {}", error.what());
      return end.status;
    }
    spdlog::error(
        "the command finished with status {} but ran unprotected since {}, when its lease was "
        "last known held: {}; another holder may have run beside it",
        end.status, wall_clock(end.last_held), error.what());
    return exit_status(ExitCode::lease_lost);
  }
  return end.status;
}

// --once-per found the period done: exit 0 (or -E's code) without running,
// quietly, as an expected outcome; -v says which run did the period.
int report_period_done(const LockFlags& flags, std::chrono::milliseconds once_per,
                       const store::PeriodRun& run) {
  spdlog::info(
      "skipped: {} already ran successfully within --once-per {}: started {} on the database's "
      "clock, on {} (owner {}, token {})",
      run.resource.str(), util::format_duration(once_per), output::iso8601(run.started), run.host,
      run.owner.str(), run.token);
  return flags.conflict_exit_code.value_or(0);
}

// --jitter: a random delay in [0, span) before the first attempt, so that a
// fleet's cron burst at :00 reaches the database spread out. It comes before
// acquiring, so -w's budget starts after it. A termination signal ends it
// (and clock, of that signal) within 100 ms: nothing is held yet.
void start_jitter(std::chrono::milliseconds span) {
  using namespace std::chrono;
  if (span <= milliseconds(0))
    return;
  std::mt19937_64 random(util::random_seed());
  milliseconds delay(std::uniform_int_distribution<milliseconds::rep>(0, span.count() - 1)(random));
  spdlog::info("jitter: waiting {} (of --jitter {}) before the first attempt",
               util::format_duration(delay), util::format_duration(span));
  util::SignalFlag signals;
  auto until = steady_clock::now() + delay;
  while (steady_clock::now() < until) {
    if (signals.caught())
      signals.die_of_caught_signal();
    std::this_thread::sleep_for(
        std::min<steady_clock::duration>(until - steady_clock::now(), milliseconds(100)));
  }
  if (signals.caught())
    signals.die_of_caught_signal();
}

// CLI11's usage line ends at [OPTIONS]; clock run's command comes after `--`,
// which CLI11 never sees (main splits it off).
class RunFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App*, std::string) const override {
    return "Usage: clock run -r RES [-r RES...] [OPTIONS] -- CMD [ARG...]\n";
  }
};
}  // namespace

Action register_run(CLI::App& app) {
  struct Options {
    LockFlags lock;
    std::optional<std::string> heartbeat;
    std::string on_lease_lost = "kill";
    std::string leftovers = "kill";
    std::optional<std::string> kill_after;
    std::optional<std::string> jitter;
    std::optional<std::string> max_runtime;
    std::optional<std::string> once_per;
    bool watch_lease = false;
    std::vector<std::string> command;
  };
  auto options = std::make_shared<Options>();
  auto* command = app.add_subcommand(
      "run", "Acquire, run CMD renewing the lease, release when it exits; exit with its status");
  command->formatter(std::make_shared<RunFormatter>());
  add_lock_flags(*command, options->lock);
  command->add_option("--heartbeat", options->heartbeat,
                      "Renew every D (default: TTL/10, at least 100ms; -v shows the outage the "
                      "timings ride out)");
  command
      ->add_option("--on-lease-lost", options->on_lease_lost,
                   "kill (stop the child, exit 79) or warn (let it run on unprotected; "
                   "exit 79 once it ends)")
      ->check(CLI::IsMember({"kill", "warn"}));
  command
      ->add_option("--leftovers", options->leftovers,
                   "What becomes of processes the command leaves running (daemons, setsid, "
                   "nohup &): kill (SIGTERM, SIGKILL after --kill-after, then release; the "
                   "default) or wait (hold the lock until they exit)")
      ->check(CLI::IsMember({"kill", "wait"}));
  command->add_option("--kill-after", options->kill_after,
                      "SIGKILL this long after SIGTERM (default: TTL/10, at most 10s; 10s "
                      "with --ttl 0)");
  command->add_option("--jitter", options->jitter,
                      "Wait a random part of D before the first attempt, not counted in -w "
                      "(spreads a fleet's cron burst; -v shows the delay)");
  command->add_option("--max-runtime", options->max_runtime,
                      "Stop the command after D as timeout(1) does (SIGTERM to all its processes, "
                      "SIGKILL after --kill-after), release, exit 124 (0: no limit)");
  command->add_option(
      "--once-per", options->once_per,
      "Run at most once successfully per D across all hosts: skip (exit 0, or -E's code; "
      "recorded as skipped) when a run that exited 0 was granted at or after the database's "
      "now - D; a failed, killed or lost run does not count");
  command->add_flag(
      "--watch-lease", options->watch_lease,
      "PostgreSQL: keep one connection that LISTENs for the loss of the lease, so that a forced "
      "release stops the command within a second, not at the next renewal (SQLite always "
      "does; not through pgbouncer)");
  command->footer(
      "Examples:\n"
      "  clock run -r bootstrap -- ./install.sh\n"
      "  */5 * * * * clock run -n -r ldap.import -- /usr/local/bin/ldap-import\n"
      "  0 * * * * clock run --jitter 5m -n -E 0 -r report -- /usr/local/bin/report\n"
      "  0 2 * * * clock run --max-runtime 3h -n -E 0 -r backup -- /usr/local/bin/backup\n"
      "  0 * * * * clock run --once-per 50m -r report -- /usr/local/bin/report  (every host)\n"
      "Exit status: the command's (128+N if a signal N ended it); 126 the command was found\n"
      "but cannot be executed, 127 it was not found; 75 not acquired (-E N: N), silently\n"
      "with -n when stderr is not a terminal; 79 lease lost; 124 --max-runtime ran out;\n"
      "64-78 as for every command (see clock --help).\n"
      "The lock covers every process the command starts, also those that leave its group\n"
      "or session: clock is their subreaper and releases only once none is left (see\n"
      "--leftovers). As a container's PID 1 it also reaps orphans.");
  return [options](Context& context) {
    options->command = context.command;
    if (options->command.empty()) {
      throw Error(ExitCode::usage,
                  "clock run needs a command after --: clock run -r NAME -- COMMAND [ARG...] "
                  "(without --, the words after -r are taken as more resources)");
    }
    auto plan = plan_lock(context, options->lock, owner_info_for_run(options->command));
    plan.request.record_refusal = true;  // a run that does not happen is history
    if (options->once_per) {
      plan.request.once_per = duration_flag("--once-per", *options->once_per);
      if (plan.request.once_per->count() <= 0)
        throw Error(ExitCode::usage, "--once-per needs a period longer than 0, e.g. --once-per 1h");
    }
    run::RunOptions run;
    run.argv = options->command;
    run.lease_name = lock::join(plan.request.resources, ",");
    run.ttl = plan.request.ttl;
    run.heartbeat = options->heartbeat
                        ? duration_flag("--heartbeat", *options->heartbeat)
                        : context.settings.heartbeat.value_or(run::default_heartbeat(run.ttl));
    run.kill_after = options->kill_after
                         ? duration_flag("--kill-after", *options->kill_after)
                         : context.settings.kill_after.value_or(run::default_kill_after(run.ttl));
    run.on_lease_lost =
        options->on_lease_lost == "warn" ? run::LeaseLostPolicy::warn : run::LeaseLostPolicy::kill;
    run.leftovers = options->leftovers == "wait" ? run::Leftovers::wait : run::Leftovers::kill;
    run.max_runtime = options->max_runtime ? duration_flag("--max-runtime", *options->max_runtime)
                                           : std::chrono::milliseconds(0);
    run::check_timing(run);
    spdlog::info("{}", run::budget_summary(run));
    if (auto warning = run::thin_budget_warning(run))
      spdlog::warn("{}", *warning);
    auto jitter = options->jitter ? duration_flag("--jitter", *options->jitter)
                                  : std::chrono::milliseconds(0);
    // Forked before the store is opened, not between the grant and the
    // command's start.
    run::Guard guard;
    start_jitter(jitter);
    if (options->watch_lease)
      context.settings.watch_lease = true;
    auto store = context.open_store();
    store::Acquired acquired;
    try {
      acquired = take_locks(context, *store, plan);
    } catch (const Error& error) {
      if (error.code() != ExitCode::not_acquired)
        throw;
      return report_refusal(context, options->lock, error);
    }
    if (acquired.done_by)
      return report_period_done(options->lock, *plan.request.once_per, *acquired.done_by);
    run.extra_env = {{"CLOCK_OWNER", plan.owner.str()},
                     {"CLOCK_RESOURCE", lock::join(plan.request.resources, ",")},
                     {"CLOCK_TOKEN", joined_tokens(acquired.grants)}};
    auto held = held_leases(plan, acquired.grants);
    auto keeping = keep_lease(*store, held);
    // Recorded before the release, while the lease is still held.
    run.on_out_of_time = [&] { record_killed(*store, plan.request); };
    // While the command runs: this process's facts as a caller (its
    // ancestors' /proc files, some 30 system calls) for the renewals and the
    // release, and whatever the store would otherwise do later.
    run.beside_command = [&] {
      this_caller();
      store->use_idle_time();
    };
    int status =
        run::supervise(run, guard, keeping, acquired.attempt_start, [&](const run::RunEnd& end) {
          return release_after_run(*store, plan, acquired.grants, end);
        });
    // The release is done and the guard stood down: where the store allows
    // it, no closing, no reaping of the guard (a wait for the kernel to end
    // it), no freeing of every object.
    if (store->may_exit_without_closing())
      util::quick_exit_if_possible(status);
    return status;
  };
}

}  // namespace clk::cmd
