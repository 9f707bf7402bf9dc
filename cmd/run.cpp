// clock run: its flags, then the run: acquire (take_locks), then
// run::run_locked runs the command as a supervised child while renewing the
// lease, releases when it exits, and gives the status clock exits with.
#include <algorithm>

#include <spdlog/spdlog.h>

#include "cmd/commands.hpp"
#include "cmd/lock_flags.hpp"
#include "error.hpp"
#include "notify/ping.hpp"
#include "notify/stderr_tail.hpp"
#include "output/text.hpp"
#include "run/jitter.hpp"
#include "run/locked_run.hpp"
#include "run/timing.hpp"
#include "store/dead_holder.hpp"
#include "util/duration.hpp"
#include "util/http_url.hpp"

namespace clk::cmd {

namespace {

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

// --ping URL, else the config file's ping.urls entry of the first resource
// that has one; none: no pings.
std::optional<notify::Pinger> pinger_for(const Context& context,
                                         const std::optional<std::string>& flag,
                                         const LockPlan& plan) {
  std::optional<std::string> url = flag;
  if (url) {
    if (auto problem = util::http_url_problem(*url); !problem.empty())
      throw Error(ExitCode::usage, "--ping: " + problem);
  }
  for (const auto& resource : plan.request.resources) {
    if (url)
      break;
    if (auto found = context.settings.ping_urls.find(resource.str());
        found != context.settings.ping_urls.end())
      url = found->second;
  }
  if (!url)
    return std::nullopt;
  return notify::Pinger(*url, plan.request.owner.str(), context.settings.ping_log_skips);
}

// The database could not be reached (or its file used): a run that pings
// says so with /fail, so the dead man's switch does not go silent.
bool database_unreachable(const Error& error) {
  return error.code() == ExitCode::unavailable || error.code() == ExitCode::local_database;
}

// --once-per or --every: the resources' expected period. It belongs to the
// job, not to whoever runs it once (docs/threat-model.md, "Expected
// periods"): a resource with no period yet gets it while the command runs
// (off the path of its start), so a job that never succeeds is still
// watched; an existing period changes only once the command exited 0
// (declare_after_success). Either is recorded in history as
// period_changed. A failure is a warning: it changes nothing for this run.
void declare_expected(store::Store& store, const LockPlan& plan, std::chrono::milliseconds every,
                      const std::vector<lock::Resource>& resources) {
  if (resources.empty())
    return;
  try {
    const auto& info = plan.request.info;
    store.expect_runs({plan.request.ns, resources, every, plan.request.owner, plan.request.secret,
                       store::Caller{info.user, info.host, info.pid, {}}});
  } catch (const Error& error) {
    spdlog::warn("could not record the expected period of {}: {}", lock::join(resources, ","),
                 error.what());
  }
}

// The resources of the run that have no expected period yet.
std::vector<lock::Resource> without_period(store::Store& store, const LockPlan& plan) {
  std::vector<lock::Resource> out;
  try {
    for (const auto& resource : plan.request.resources) {
      auto known = store.expected_runs({plan.request.ns, resource, std::nullopt});
      bool found = std::any_of(known.runs.begin(), known.runs.end(), [&](const auto& run) {
        return run.ns == plan.request.ns && run.resource == resource;
      });
      if (!found)
        out.push_back(resource);
    }
  } catch (const Error& error) {
    spdlog::warn("could not read the expected period of {}: {}",
                 lock::join(plan.request.resources, ","), error.what());
  }
  return out;
}

// The bounds of an expected period: shorter than a second is no schedule
// (and would raise an alarm at once), longer than a year no watch.
constexpr std::chrono::milliseconds k_shortest_period = std::chrono::seconds(1);
constexpr std::chrono::milliseconds k_longest_period = std::chrono::days(366);

bool period_in_bounds(std::chrono::milliseconds every) {
  return every >= k_shortest_period && every <= k_longest_period;
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
    std::optional<std::string> leftovers;
    std::optional<std::string> kill_after;
    std::optional<std::string> jitter;
    std::optional<std::string> max_runtime;
    std::optional<std::string> once_per;
    std::optional<std::string> every;
    std::optional<std::string> ping;
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
                   "default) or wait (hold the lock until they exit; status shows them). "
                   "Default: the config's lock.leftovers, else kill")
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
  command->add_option(
      "--every", options->every,
      "Expect a successful run at least every D, 1s to 366d (status and 'clock missed' show "
      "the resource overdue otherwise), without --once-per's skipping; with --once-per, the "
      "expected period is --every's (default: --once-per's); only a run that exits 0 changes "
      "a period already declared, recorded in history as period_changed");
  command->add_option(
      "--ping", options->ping,
      "Ping a healthchecks.io-style URL from the host that runs the command: /start, then "
      "/<exit status> with the last 10 KiB of its stderr; /fail if the database is unreachable; "
      "nothing from a host that skipped (config ping.on_skip = \"log\": /log). Each ping waits "
      "at most 2s and never changes the exit status. Default: the config's ping.urls entry");
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
      "  0 3 * * * clock run -n -E 0 --every 1d --ping https://hc-ping.com/UUID -r backup -- "
      "backup.sh\n"
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
    // --once-per's period is also the expected one, when it is a sane one.
    std::optional<std::chrono::milliseconds> every = plan.request.once_per;
    if (every && !period_in_bounds(*every))
      every.reset();
    if (options->every) {
      every = duration_flag("--every", *options->every);
      if (!period_in_bounds(*every))
        throw Error(ExitCode::usage,
                    "--every needs a period from 1s to 366d, e.g. --every 1d (got " +
                        *options->every + ")");
    }
    auto pinger = pinger_for(context, options->ping, plan);
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
    bool await_leftovers =
        options->leftovers ? *options->leftovers == "wait" : context.settings.leftovers_wait;
    run.leftovers = await_leftovers ? run::Leftovers::wait : run::Leftovers::kill;
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
    // What shows on this host that this holder died, written on its leases
    // with their grant (docs/dead-holder.md).
    const run::JobCgroup* job_cgroup = guard.cgroup();
    plan.request.holder =
        store::this_holder(guard.process_group(), job_cgroup ? job_cgroup->path() : "");
    run::wait_jitter(jitter);
    if (options->watch_lease)
      context.settings.watch_lease = true;
    std::unique_ptr<store::Store> store;
    store::Acquired acquired;
    try {
      store = context.open_store();
      acquired = take_locks(context, *store, plan);
    } catch (const Error& error) {
      if (pinger && database_unreachable(error))
        pinger->failed(std::string("clock: database unreachable: ") + error.what());
      if (error.code() != ExitCode::not_acquired)
        throw;
      if (pinger)
        pinger->skipped(std::string("clock: skipped: ") + error.what());
      return report_refusal(context, options->lock, error);
    }
    if (acquired.done_by) {
      if (pinger)
        pinger->skipped("clock: skipped: the period was done by the run on " +
                        acquired.done_by->host + " started " +
                        output::iso8601(acquired.done_by->started));
      return report_period_done(options->lock, *plan.request.once_per, *acquired.done_by);
    }
    // The job runs here: only this host pings its start and end.
    if (pinger)
      pinger->started();
    notify::StderrTail tail(notify::k_tail_bytes);
    if (pinger)
      tail.start();
    run::HeldLocks held{plan.request, plan.owner.str(), std::move(acquired), this_caller};
    if (every) {
      held.beside_command = [&store, &plan, every] {
        declare_expected(*store, plan, *every, without_period(*store, plan));
      };
      held.after_success = [&store, &plan, every] {
        declare_expected(*store, plan, *every, plan.request.resources);
      };
    }
    if (pinger)
      held.after_release = [&pinger, &tail](int status) { pinger->finished(status, tail.stop()); };
    return run::run_locked(run, guard, *store, held);
  };
}

}  // namespace clk::cmd
