// clock missed: the periods since a time in which a resource with an expected
// period (clock run --once-per / --every) had no successful run, and which
// are overdue now. Its exit status is a Nagios/Icinga check's: 0 OK, 1
// WARNING (periods were missed, none is overdue now), 2 CRITICAL (overdue).
#include <spdlog/spdlog.h>

#include "cmd/commands.hpp"
#include "output/expected_render.hpp"
#include "output/text.hpp"
#include "store/expected.hpp"
#include "util/duration.hpp"
#include "util/utc_instant.hpp"

namespace clk::cmd {

namespace {

constexpr int k_ok = 0;
constexpr int k_missed = 1;   // Nagios WARNING
constexpr int k_overdue = 2;  // Nagios CRITICAL

// --since: an instant ("2026-11-26T03:00Z") or a duration ago ("1d").
lock::Instant since_of(const std::optional<std::string>& flag, lock::Instant now) {
  if (!flag)
    return now - std::chrono::hours(24);
  if (auto at = util::parse_utc_instant(*flag))
    return *at;
  if (auto ago = util::parse_duration(*flag))
    return now - *ago;
  throw Error(ExitCode::usage,
              "--since: expected a duration ago (\"1d\", \"12h\") or a UTC "
              "instant (\"2026-11-26T03:00:00Z\"), not '" +
                  *flag + "'");
}

struct Verdict {
  int status = k_ok;
  std::vector<std::string> overdue;  // resources
  std::int64_t missed = 0;           // closed periods missed since --since
};

Verdict judge(const store::ExpectedRuns& expected, lock::Instant since) {
  Verdict verdict;
  for (const auto& run : expected.runs) {
    auto missed = store::missed_periods(run, since, expected.now);
    verdict.missed += missed.missed;
    if (store::overdue(run, expected.now))
      verdict.overdue.push_back((run.ns.empty() ? "" : run.ns + ":") + run.resource.str());
  }
  verdict.status = !verdict.overdue.empty() ? k_overdue : verdict.missed > 0 ? k_missed : k_ok;
  return verdict;
}

// A namespace (any text a caller chose) as plugin output: control
// characters escaped (a newline would start the long output, an ESC drive a
// terminal) and '|' too, which would start forged perfdata.
std::string nagios_text(std::string_view text) {
  std::string out;
  for (char c : output::escape_for_terminal(text))
    out += c == '|' ? std::string("\\x7c") : std::string(1, c);
  return out;
}

// The first line a Nagios/Icinga check prints, with perfdata.
std::string nagios_line(const Verdict& verdict, std::size_t resources) {
  static const char* k_states[] = {"OK", "WARNING", "CRITICAL"};
  std::string line = std::string("CLOCK ") + k_states[verdict.status] + " - ";
  if (!verdict.overdue.empty()) {
    line += std::to_string(verdict.overdue.size()) + " overdue:";
    for (const auto& name : verdict.overdue)
      line += " " + nagios_text(name);
    line += "; ";
  }
  line += std::to_string(verdict.missed) + " missed period" + (verdict.missed == 1 ? "" : "s") +
          " of " + std::to_string(resources) + " expected resource" + (resources == 1 ? "" : "s") +
          " | overdue=" + std::to_string(verdict.overdue.size()) +
          " missed=" + std::to_string(verdict.missed) + "\n";
  return line;
}

}  // namespace

Action register_missed(CLI::App& app) {
  struct Options {
    std::optional<std::string> prefix;
    std::optional<std::string> since;
    std::string format = "table";
  };
  auto options = std::make_shared<Options>();
  auto* command = app.add_subcommand(
      "missed", "List the periods with no successful run of resources that expect one");
  command->add_option("prefix", options->prefix, "Only this resource and those below it");
  command->add_option("--since", options->since,
                      "From this UTC instant (2026-11-26T03:00:00Z) or this long ago (12h, 7d); "
                      "default 1d");
  command->add_option("--format", options->format, "table, json or nagios (one line)");
  command->footer(
      "A resource expects a successful run every D once clock run --once-per D or --every D\n"
      "ran it. A successful run covers the period D from its start; time no run covers is\n"
      "cut into periods of D: one that ended with no successful run started in it is\n"
      "missed, and the current one makes the resource OVERDUE.\n"
      "Exit status (as a Nagios/Icinga check): 0 nothing missed, 1 periods were missed since\n"
      "--since but none is overdue now, 2 a resource is overdue; 64-79 as for every command.\n"
      "JSON Schema of --format json: /usr/share/doc/clock/schema/missed.schema.json (package), "
      "packaging/schema/missed.schema.json (source tree)\n"
      "Examples:\n"
      "  clock missed --since 7d\n"
      "  clock missed backup --format nagios     (an NRPE or Icinga command)");
  return [options](Context& context) {
    auto format = format_flag(
        options->format, {output::Format::table, output::Format::json, output::Format::nagios});
    store::ExpectedQuery query;
    if (context.settings.ns_given)
      query.ns = context.settings.ns;
    if (options->prefix)
      query.prefix = lock::Resource::parse(*options->prefix);
    // "ago" counts from this host's clock: a window's edge, not a decision,
    // so skew moves it by the skew at most.
    auto since = since_of(options->since, std::chrono::system_clock::now());
    auto store = context.open_store();
    query.since = since;
    auto expected = store->expected_runs(query);
    auto verdict = judge(expected, since);
    if (format == output::Format::nagios)
      print(nagios_line(verdict, expected.runs.size()));
    else
      print(output::render_missed(expected, since, format));
    return verdict.status;
  };
}

}  // namespace clk::cmd
