// Settings: built-in defaults < the TOML config file < environment < flags
// (man clock, ENVIRONMENT). Every key of the file is documented in config/clock.toml.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lock/lease.hpp"

namespace clk::config {

using std::chrono::milliseconds;

// The built-in database_patience (store::WaitPolicy takes it from here).
inline constexpr milliseconds k_default_database_patience{5 * 60 * 1000};

// A duration setting that may also be "forever" (none): database_patience,
// --db-patience. nullopt when `text` is neither.
std::optional<std::optional<milliseconds>> parse_patience(const std::string& text);

enum class LogFormat { text, json };

struct Settings {
  std::string database_url;          // empty means the default SQLite file
  bool database_is_default = false;  // database_url is default_database_url(): nobody named it
  std::string ns;                    // "" is the global namespace
  bool ns_given = false;             // set by flag, env or file (status filters on it)
  std::optional<std::string> owner;  // CLOCK_OWNER / --owner
  std::string log_level = "warn";    // trace, debug, info, warn, error, off
  LogFormat log_format = LogFormat::text;
  milliseconds ttl = lock::k_default_ttl;
  std::optional<milliseconds> heartbeat;   // none: run::default_heartbeat(ttl)
  std::optional<milliseconds> kill_after;  // none: run::default_kill_after(ttl)
  bool leftovers_wait = false;  // lock.leftovers = "wait": the default of clock run --leftovers
  milliseconds connect_timeout{5'000};
  // database_patience: how long run and acquire without -w try a database
  // they cannot reach before giving up (69); none: forever.
  std::optional<milliseconds> database_patience = k_default_database_patience;
  std::string pg_schema = "clock";
  bool watch_lease = false;  // clock run on PostgreSQL: LISTEN for the loss of its lease
  // On a Galera node: the most the nodes' clocks may differ by (store/mariadb/node_clocks.hpp).
  milliseconds galera_max_skew{500};
  std::optional<milliseconds> history_retention;  // gc prunes history older than this
  int gc_batch_size = 1000;
  bool allow_network_filesystem = false;
  // clock run's pings: each resource's URL ([ping.urls], resource name →
  // URL), and whether a run skipped because another ran or holds it pings
  // /log (ping.on_skip = "log") rather than nothing.
  std::map<std::string, std::string> ping_urls;
  bool ping_log_skips = false;
  std::filesystem::path config_file;  // the file that was read, if any
  std::vector<std::string> warnings;  // one line each, for the caller to log
  // Where each setting that is not a built-in default came from, keyed as in
  // the config file ("database", "lock.ttl"): "--database flag",
  // "CLOCK_DATABASE_URL", "config file PATH (key database)". See origin_of().
  std::map<std::string, std::string> origins;
};

// Where the setting `key` (a config file key) came from: its entry in
// Settings::origins, else "default" ("default (per-user SQLite)" for the
// database).
std::string origin_of(const Settings& settings, const std::string& key);

// What the command line said; unset fields fall through to env, file, defaults.
struct Flags {
  std::optional<std::string> config_file;
  std::optional<std::string> database_url;
  std::optional<std::string> ns;
  std::optional<std::string> log_format;
};

using Environment = std::map<std::string, std::string>;

// The process environment as a map (only the variables clock reads).
Environment process_environment();

// The config file to read: --config, else $CLOCK_CONFIG (both must exist),
// else the first of $XDG_CONFIG_HOME/clock/clock.toml (or ~/.config/…) and
// /etc/clock/clock.toml that exists, or may exist (a folder on its path
// cannot be searched); none if no file is found. A relative
// XDG_CONFIG_HOME is ignored, as the XDG spec says.
std::optional<std::filesystem::path> locate_config_file(const Flags& flags, const Environment& env);

// Applies the TOML text of a config file (named `file` in messages) over
// `settings`. Throws clk::Error(config) naming file, line and key. The
// real loader, callable on a buffer (the config fuzzer uses it).
void apply_config_text(Settings& settings, std::string_view text,
                       const std::filesystem::path& file);

// Resolves the settings. A config file whose database URL holds a password
// must be private to its owner (mode 0600 or stricter, as libpq's ~/.pgpass):
// otherwise clk::Error(config) names the file and its mode. Throws clk::Error(config) naming file,
// line and key for an unreadable or invalid file, clk::Error(usage) for a bad flag value.
// A fallback file the user did not name (--config, CLOCK_CONFIG) and may not
// read is clk::Error(config) too, naming the file, the reason and the fix (it
// may name the shared database); only when the database is named anyway
// (--database, CLOCK_DATABASE_URL) is it skipped with a line in
// Settings::warnings (man clock, ENVIRONMENT).
Settings resolve(const Flags& flags, const Environment& env);

// Applies a subcommand's --owner over CLOCK_OWNER: the flag wins (man clock, ENVIRONMENT),
// except that --owner ID keeps CLOCK_OWNER's ID.SECRET when it holds the same
// id (the secret stays out of argv). Throws clk::Error(usage) for a bad id.
// --owner belongs to the subcommands that take it, so it is applied after
// resolve(), when the subcommand runs.
void apply_owner_flag(Settings& settings, const std::optional<std::string>& owner_flag);

// The default SQLite database URL: sqlite:${XDG_STATE_HOME:-$HOME/.local/state}/clock/clock.db
// (a relative XDG_STATE_HOME is ignored).
std::string default_database_url(const Environment& env);

}  // namespace clk::config
