// The clock binary: builds the CLI, resolves settings, runs one subcommand,
// and is the only place that catches errors and turns them into exit codes.
#include <algorithm>
#include <malloc.h>
#include <map>
#include <memory>
#include <optional>
#include <string_view>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "cmd/commands.hpp"
#include "error.hpp"
#include "output/logging.hpp"
#include "store/database_url.hpp"
#include "util/file_size_signal.hpp"
#include "util/http_url.hpp"
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
                 "sqlite:/path/file.db, postgresql://… (postgres://…), 'host=… dbname=…' or "
                 "mariadb://… (mysql://…; mariadb://user@node1,node2,node3/db for the "
                 "nodes of a Galera cluster) "
                 "(default: $CLOCK_DATABASE_URL, else the config file's database, else "
                 "~/.local/state/clock/clock.db); "
                 "keep passwords in ~/.pgpass, ~/.my.cnf or $CLOCK_DATABASE_URL, not here "
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

// A ping URL given with --ping (its user:password@, and its path: the
// check's secret uuid or ping key) shows in /proc/PID/cmdline: those parts
// are overwritten before anything else runs, as owner secrets are, the
// host kept. The guard's copy too. The wrapped command's words go as well
// (a nested `clock run --ping URL`): the command gets its own copy.
void hide_ping_urls_in_argv(int argc, char** argv) {
  auto blank = [](char* word, std::size_t offset, const std::vector<util::Span>& spans) {
    for (const auto& span : spans) {
      for (std::size_t k = offset + span.begin; k < offset + span.end; ++k)
        word[k] = 'x';
    }
  };
  for (int i = 1; i < argc; ++i) {
    std::string_view arg(argv[i]);
    if (i > 1 && std::string_view(argv[i - 1]) == "--ping")
      blank(argv[i], 0, util::http_url_secret_spans(arg));
    else
      blank(argv[i], 0, util::ping_url_spans(arg));
  }
}

// "SQLite sqlite:/…/clock.db, from default (per-user SQLite)": which database
// a command uses and why, for -v (a cron job under another HOME must not
// silently use a per-host file where the fleet's PostgreSQL was meant).
std::string database_in_use(const config::Settings& settings) {
  std::string backend;
  try {
    backend = std::string(store::backend_name(store::backend_of(settings.database_url))) + " ";
  } catch (const Error&) {
    // The command says what is wrong with the URL when it opens it.
  }
  return backend + store::mask_password(settings.database_url) + ", from " +
         config::origin_of(settings, "database");
}

int run_action(cmd::Context& context, const cmd::Action& action) {
  context.settings = config::resolve(context.flags, config::process_environment());
  output::setup_logging(log_level_for(context), context.settings.log_format);
  for (const auto& warning : context.settings.warnings)
    spdlog::warn("{}", warning);
  spdlog::info("database: {}", database_in_use(context.settings));
  return action(context);
}

// The edit distance of two option names, for "did you mean".
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The closest of `known` to `word`, if close enough to be a typo.
std::optional<std::string> closest(const std::string& word, const std::vector<std::string>& known) {
  std::optional<std::string> best;
  std::size_t best_distance = std::max<std::size_t>(2, word.size() / 4) + 1;
  for (const auto& candidate : known) {
    std::size_t d = edit_distance(word, candidate);
    if (d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

std::vector<std::string> long_options(const CLI::App& app) {
  std::vector<std::string> names;
  for (const auto* option : app.get_options()) {
    for (const auto& name : option->get_lnames())
      names.push_back("--" + name);
  }
  return names;
}

// A parse error in words that help (man clock, EXIT STATUS: what failed and what to do): an
// unknown option names itself and the closest known one (CLI11 would report a
// required option missing first, when the typo was that option), an unknown
// subcommand the closest one, and clock run without `--` where the command
// should be. `args` are clock's own words, in order.
std::string parse_error_message(CLI::App& app, const std::vector<std::string>& args,
                                bool has_command, const CLI::ParseError& error) {
  static constexpr std::string_view k_with_value[] = {"--config", "--database", "--namespace",
                                                      "--log-format"};
  CLI::App* sub = nullptr;
  std::vector<std::string> subcommand_names;
  for (auto* candidate : app.get_subcommands([](CLI::App*) { return true; }))
    subcommand_names.push_back(candidate->get_name());
  std::string unknown_word;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!sub && std::find(std::begin(k_with_value), std::end(k_with_value), arg) !=
                    std::end(k_with_value)) {
      ++i;
      continue;
    }
    if (!arg.starts_with('-')) {
      if (sub)
        continue;  // a value or a positional: CLI11 judges those
      for (auto* candidate : app.get_subcommands([](CLI::App*) { return true; })) {
        if (candidate->get_name() == arg)
          sub = candidate;
      }
      if (!sub) {
        auto near = closest(arg, subcommand_names);
        return "unknown command '" + arg + "'" + (near ? "; did you mean " + *near + "?" : "") +
               " (see 'clock --help')";
      }
      continue;
    }
    std::string name = arg.substr(0, arg.find('='));
    bool checkable = name.starts_with("--") || name.size() == 2;
    bool known = app.get_option_no_throw(name) || (sub && sub->get_option_no_throw(name));
    if (checkable && name != "--" && !known) {
      unknown_word = name;
      break;
    }
  }
  std::string where = sub ? "clock " + sub->get_name() : "clock";
  bool run_without_dashes = sub && sub->get_name() == "run" && !has_command;
  std::string dashes_hint =
      run_without_dashes
          ? "; put -- before the command and its arguments: clock run -r NAME [OPTIONS] -- "
            "COMMAND [ARG...]"
          : "";
  if (!unknown_word.empty()) {
    auto known = long_options(app);
    if (sub) {
      auto own = long_options(*sub);
      known.insert(known.end(), own.begin(), own.end());
    }
    auto near = unknown_word.starts_with("--") ? closest(unknown_word, known) : std::nullopt;
    std::string message = "unknown option " + unknown_word + " of " + where;
    if (near)
      return message + "; did you mean " + *near + "? (see '" + where + " --help')";
    return message + (run_without_dashes ? dashes_hint : " (see '" + where + " --help')");
  }
  if (run_without_dashes && dynamic_cast<const CLI::ExtrasError*>(&error))
    return std::string(error.what()) + dashes_hint;
  return std::string(error.what()) + " (see '" + where + " --help')";
}

// The subcommands, in the order --help lists them.
struct Subcommand {
  const char* name;
  cmd::Action (*add)(CLI::App&);
};
constexpr Subcommand k_subcommands[] = {
    {"acquire", cmd::register_acquire}, {"release", cmd::register_release},
    {"renew", cmd::register_renew},     {"status", cmd::register_status},
    {"history", cmd::register_history}, {"run", cmd::register_run},
    {"gc", cmd::register_gc},           {"init", cmd::register_init},
    {"config", cmd::register_config},   {"check", cmd::register_check},
    {"missed", cmd::register_missed},   {"serve", cmd::register_serve},
};

// The subcommand `words` name, when they surely name one: the first word
// that is a subcommand's name, unless they ask for help or the version,
// which list every subcommand. Setting up only that subcommand's flags
// spares each clock the others' (about 0.13 ms of a `clock run`,
// docs/performance.md). A flag's value that spells a subcommand's name
// (--namespace run status) makes the guess wrong; the parse then fails, and
// main() parses again with every subcommand, so only time is lost.
std::optional<std::string> named_subcommand(const std::vector<std::string>& words) {
  for (const auto& word : words) {
    bool short_flags = word.size() > 1 && word[0] == '-' && word[1] != '-';
    if (word == "--help" || word == "--version" ||
        (short_flags && word.find('h') != std::string::npos))
      return std::nullopt;
  }
  for (const auto& word : words) {
    for (const auto& subcommand : k_subcommands) {
      if (word == subcommand.name)
        return word;
    }
  }
  return std::nullopt;
}

// The CLI with the global flags and the subcommands (`only` that one, if
// named), each subcommand's action in `actions`.
std::unique_ptr<CLI::App> make_app(cmd::Context& context, std::map<CLI::App*, cmd::Action>& actions,
                                   const std::optional<std::string>& only) {
  auto app_owner = std::make_unique<CLI::App>(
      "clock: serialize shell jobs across machines through one shared SQL lock table.\n"
      "Example: clock run --resource bootstrap -- ./install.sh",
      "clock");
  CLI::App& app = *app_owner;
  add_global_flags(app, context);
  app.require_subcommand(1);
  app.fallthrough();
  app.footer(
      "Exit codes: 0 ok, 64 usage, 69 backend unavailable, 70 internal, 74 local "
      "database file, 75 not acquired, 76 deadlock, 77 not the owner, 78 configuration, "
      "79 lease lost, 124 out of time (clock run --max-runtime); clock run passes the "
      "command's status through (126 cannot execute, 127 not found); clock status "
      "exits 1 when nothing is held; clock check exits 0 when the set-up is right; clock missed "
      "exits 1 when periods were missed, 2 when a job is overdue (as a Nagios check).\n"
      "-v names the database in use and where it came from; clock config lists every "
      "setting with its origin.\n"
      "CLOCK_OWNER is ID.SECRET: the public owner id and the owner's secret, "
      "which renew, release and re-entry need (77 without it); only 'clock acquire --format "
      "shell' and clock run's child get it. Keep the secret in CLOCK_OWNER: --owner ID "
      "takes it from there; --owner ID.SECRET works, but shows in ps until clock blanks "
      "it as it starts.\n"
      "See 'clock COMMAND --help' and man clock.");
  for (const auto& subcommand : k_subcommands) {
    if (!only || *only == subcommand.name) {
      auto action = subcommand.add(app);
      actions[app.get_subcommand(subcommand.name)] = std::move(action);
    }
  }
  return app_owner;
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
  // Split off the wrapped command: CLI11 would parse its flags as ours.
  std::vector<std::string> args(argv + 1, argv + argc);
  hide_owner_secrets_in_argv(argc, argv);
  hide_ping_urls_in_argv(argc, argv);
  auto dashes = std::find(args.begin(), args.end(), "--");
  bool has_command = dashes != args.end();
  std::vector<std::string> command;
  if (has_command) {
    command.assign(dashes + 1, args.end());
    args.erase(dashes, args.end());
  }
  const std::vector<std::string>& words = args;  // in order, for parse_error_message
  auto only = named_subcommand(words);
  cmd::Context context;
  std::map<CLI::App*, cmd::Action> actions;
  auto app = make_app(context, actions, only);
  for (;;) {
    context.command = command;
    try {
      std::vector<std::string> last_first(words.rbegin(), words.rend());  // as CLI11 takes them
      app->parse(last_first);
      auto chosen = app->get_subcommands();
      if (has_command && (chosen.empty() || chosen.front()->get_name() != "run")) {
        throw CLI::ExtrasError({"--"});
      }
      break;
    } catch (const CLI::ParseError& error) {
      if (only) {  // the guess was wrong, or the words are: parse again with every subcommand
        only.reset();
        context = cmd::Context();
        actions.clear();
        app = make_app(context, actions, only);
        continue;
      }
      // CLI11's own codes start near 100 and would collide with a child's
      // status: help and version exit 0, every parse error is usage (64).
      if (error.get_exit_code() == 0)
        return app->exit(error);
      spdlog::error("{}", parse_error_message(*app, words, has_command, error));
      return exit_status(ExitCode::usage);
    }
  }
  hide_password_in_argv(argc, argv, context);
  try {
    for (auto* subcommand : app->get_subcommands())
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
