// The clock binary: builds the CLI, resolves settings, runs one subcommand,
// and is the only place that catches errors and turns them into exit codes.
#include <algorithm>
#include <malloc.h>
#include <map>
#include <string_view>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "cmd/commands.hpp"
#include "error.hpp"
#include "output/logging.hpp"
#include "util/file_size_signal.hpp"
#include "util/owner_secret.hpp"
#include "util/password.hpp"

namespace {

using namespace clk;

std::string log_level_for(const cmd::Context& context) {
  if (context.quiet)
    return "error";
  if (context.verbosity >= 2)
    return "debug";
  if (context.verbosity == 1)
    return "info";
  return context.settings.log_level;
}

void add_global_flags(CLI::App& app, cmd::Context& context) {
  app.set_version_flag("--version", "clock " CLOCK_VERSION);
  app.add_option("--config", context.flags.config_file,
                 "Config file (default: $CLOCK_CONFIG, "
                 "~/.config/clock/clock.toml, /etc/clock/clock.toml); "
                 "one whose database URL holds a password must be mode 0600; one this "
                 "user cannot read is an error (78) unless --database or "
                 "$CLOCK_DATABASE_URL names the database");
  app.add_option("--database", context.flags.database_url,
                 "sqlite:/path/file.db, postgresql://… or 'host=… dbname=…' "
                 "(default: $CLOCK_DATABASE_URL, else ~/.local/state/clock/clock.db); "
                 "keep passwords in ~/.pgpass or $CLOCK_DATABASE_URL, not here "
                 "(ps shows them until clock has parsed its flags)");
  app.add_option("--namespace", context.flags.ns,
                 "Lock namespace (default: $CLOCK_NAMESPACE, "
                 "else global)");
  app.add_flag("-v,--verbose", context.verbosity, "More log output (-vv for debug)");
  app.add_flag("-q,--quiet", context.quiet, "Only errors on stderr");
  app.add_option("--log-format", context.flags.log_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
}

// A password given with --database shows in /proc/PID/cmdline, which every
// user of the host can read (ps): overwrite it in our argv once parsed, as
// mysql does. It was visible until now, so the README recommends ~/.pgpass,
// CLOCK_DATABASE_URL or a private config file instead.
void hide_password_in_argv(int argc, char** argv, const cmd::Context& context) {
  if (!context.flags.database_url || !util::has_password(*context.flags.database_url))
    return;
  const std::string& url = *context.flags.database_url;
  for (int i = 1; i < argc && std::string_view(argv[i]) != "--"; ++i) {
    std::string_view arg(argv[i]);
    if (!arg.ends_with(url) || (arg != url && !arg.starts_with("--database=")))
      continue;
    std::size_t offset = arg.size() - url.size();
    for (const auto& span : util::password_spans(url, util::Words::until_keyword)) {
      for (std::size_t k = span.begin; k < span.end; ++k)
        argv[i][offset + k] = 'x';
    }
  }
}

// An owner secret given as --owner ID.SECRET shows in /proc/PID/cmdline,
// which every user of the host can read (ps). Its shape names it without
// parsing, so it is overwritten before anything else runs (parsing reads a
// copy of argv): before the guard starts too, since a forked guard keeps a
// copy of argv as it was. The wrapped command's words go as well: clock's
// argv is only for ps; the command gets its own copy.
void hide_owner_secrets_in_argv(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    for (const auto& span : util::owner_secret_spans(argv[i])) {
      for (std::size_t k = span.begin; k < span.end; ++k)
        argv[i][k] = 'x';
    }
  }
}

int run_action(cmd::Context& context, const cmd::Action& action) {
  context.settings = config::resolve(context.flags, config::process_environment());
  output::setup_logging(log_level_for(context), context.settings.log_format);
  for (const auto& warning : context.settings.warnings)
    spdlog::warn("{}", warning);
  return action(context);
}

}  // namespace

int main(int argc, char** argv) {
  // A clock lives milliseconds, or waits with a small heap: glibc giving the
  // top of the heap back as soon as 128 KiB of it is free (a brk() and a TLB
  // flush) only has the next allocations fault the same pages in again. Up
  // to 1 MiB stays.
  mallopt(M_TRIM_THRESHOLD, 1 << 20);
  output::setup_logging("warn", config::LogFormat::text);
  // A write past `ulimit -f` must be an error we can report (74), not death.
  util::ignore_file_size_signal();
  cmd::Context context;
  // Split off the wrapped command: CLI11 would parse its flags as ours.
  std::vector<std::string> args(argv + 1, argv + argc);
  hide_owner_secrets_in_argv(argc, argv);
  auto dashes = std::find(args.begin(), args.end(), "--");
  bool has_command = dashes != args.end();
  if (has_command) {
    context.command.assign(dashes + 1, args.end());
    args.erase(dashes, args.end());
  }
  CLI::App app(
      "clock: serialize shell jobs across machines through one shared SQL lock table.\n"
      "Example: clock run --resource bootstrap -- ./install.sh",
      "clock");
  add_global_flags(app, context);
  app.require_subcommand(1);
  app.fallthrough();
  app.footer(
      "Exit codes: 0 ok, 64 usage, 69 backend unavailable, 70 internal, 74 local "
      "database file, 75 not acquired, 76 deadlock, 77 not the owner, 78 configuration, "
      "79 lease lost, 124 out of time (clock run --max-runtime); clock run passes the "
      "command's status through; clock status "
      "exits 1 when nothing is held.\n"
      "CLOCK_OWNER is ID.SECRET: the public owner id and the owner's secret, "
      "which renew, release and re-entry need (77 without it); only 'clock acquire --format "
      "shell' and clock run's child get it. Keep the secret in CLOCK_OWNER: --owner ID "
      "takes it from there; --owner ID.SECRET works, but shows in ps until clock blanks "
      "it as it starts.\n"
      "See 'clock COMMAND --help' and man clock.");
  std::map<CLI::App*, cmd::Action> actions;
  auto add = [&](cmd::Action (*register_command)(CLI::App&), const char* name) {
    auto action = register_command(app);
    actions[app.get_subcommand(name)] = std::move(action);
  };
  add(cmd::register_acquire, "acquire");
  add(cmd::register_release, "release");
  add(cmd::register_renew, "renew");
  add(cmd::register_status, "status");
  add(cmd::register_history, "history");
  add(cmd::register_run, "run");
  add(cmd::register_gc, "gc");
  add(cmd::register_init, "init");

  std::reverse(args.begin(), args.end());  // CLI11 takes them last-first
  try {
    app.parse(args);
    auto chosen = app.get_subcommands();
    if (has_command && (chosen.empty() || chosen.front()->get_name() != "run")) {
      throw CLI::ExtrasError({"--"});
    }
  } catch (const CLI::ParseError& error) {
    // CLI11's own codes start near 100 and would collide with a child's
    // status: help and version exit 0, every parse error is usage (64).
    if (error.get_exit_code() == 0)
      return app.exit(error);
    spdlog::error("{} (see 'clock --help')", error.what());
    return exit_status(ExitCode::usage);
  }
  hide_password_in_argv(argc, argv, context);
  try {
    for (auto* subcommand : app.get_subcommands())
      return run_action(context, actions.at(subcommand));
    return exit_status(ExitCode::usage);
  } catch (const Error& error) {
    spdlog::error("{}", error.what());
    return exit_status(error.code());
  } catch (const std::exception& error) {
    spdlog::error("internal error (a bug, please report it): {}", error.what());
    return exit_status(ExitCode::internal);
  }
}
