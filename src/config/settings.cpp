// Settings resolution: defaults, then the TOML file, then the environment,
// then flags. Errors name the file, line and key.
#include "config/settings.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <toml++/toml.h>

#include "config/file_trust.hpp"
#include "config/user_config_file.hpp"
#include "error.hpp"
#include "lock/owner.hpp"
#include "lock/resource.hpp"
#include "util/duration.hpp"
#include "util/http_url.hpp"
#include "util/password.hpp"

extern char** environ;

namespace clk::config {

std::optional<std::optional<milliseconds>> parse_patience(const std::string& text) {
  if (text == "forever")
    return std::optional<milliseconds>();
  if (auto parsed = util::parse_duration(text))
    return std::optional<milliseconds>(*parsed);
  return std::nullopt;
}

namespace {

namespace fs = std::filesystem;

std::optional<std::string> lookup(const Environment& env, const std::string& name) {
  auto it = env.find(name);
  if (it == env.end() || it->second.empty())
    return std::nullopt;
  return it->second;
}

// $HOME, else the home directory of the effective user (cron and systemd may
// run jobs without HOME).
std::string home(const Environment& env) {
  if (auto value = lookup(env, "HOME"))
    return *value;
  if (auto* entry = getpwuid(geteuid()); entry && entry->pw_dir)
    return entry->pw_dir;
  return "/";
}

[[noreturn]] void file_error(const fs::path& file, const toml::source_region& where,
                             const std::string& key, const std::string& what) {
  throw Error(ExitCode::config,
              file.string() + ":" + std::to_string(where.begin.line) + ": " + key + ": " + what);
}

// Reads typed values out of the parsed file, remembering where each came from.
class FileReader {
 public:
  FileReader(fs::path file, toml::table table)
      : m_file(std::move(file)), m_table(std::move(table)) {}

  void check_known_keys() {
    static const std::map<std::string, std::vector<std::string>> k_known = {
        {"",
         {"database", "database_patience", "namespace", "log_level", "log_format", "lock",
          "postgres", "mariadb", "gc", "sqlite", "ping"}},
        {"ping", {"on_skip", "urls"}},
        {"lock", {"ttl", "heartbeat", "kill_after", "leftovers"}},
        {"postgres", {"schema", "connect_timeout", "watch_lease"}},
        {"mariadb", {"galera_max_skew"}},
        {"gc", {"history_retention", "batch_size"}},
        {"sqlite", {"allow_network_filesystem"}}};
    check_table(m_table, "", k_known);
  }

  // [ping.urls]: resource name → ping URL, each checked.
  std::map<std::string, std::string> ping_urls() {
    std::map<std::string, std::string> urls;
    auto node = m_table.at_path("ping.urls");
    if (!node)
      return urls;
    if (!node.is_table())
      file_error(m_file, node.node()->source(), "ping.urls", "expected a table");
    for (const auto& [key, value] : *node.as_table()) {
      const std::string full = "ping.urls." + std::string(key.str());
      try {
        lock::Resource::parse(key.str());
      } catch (const Error& error) {
        file_error(m_file, value.source(), full, error.what());
      }
      auto url = value.value<std::string>();
      if (!url || !value.is_string())
        file_error(m_file, value.source(), full, "expected a URL string");
      if (auto problem = util::http_url_problem(*url); !problem.empty())
        file_error(m_file, value.source(), full, problem);
      urls.emplace(std::string(key.str()), *url);
    }
    return urls;
  }

  bool has(const std::string& path) const { return static_cast<bool>(m_table.at_path(path)); }

  std::optional<std::string> string(const std::string& path) {
    auto node = m_table.at_path(path);
    if (!node)
      return std::nullopt;
    if (auto value = node.value<std::string>())
      return *value;
    file_error(m_file, node.node()->source(), path, "expected a string");
  }

  std::optional<milliseconds> duration(const std::string& path) {
    auto node = m_table.at_path(path);
    if (!node)
      return std::nullopt;
    std::optional<milliseconds> parsed;
    // is_integer() first: toml++'s value<int64_t>() of a float out of
    // int64's range is undefined behaviour (found by tests/fuzz/fuzz_config).
    if (node.is_integer()) {
      parsed = util::parse_duration(std::to_string(*node.value<std::int64_t>()));
    } else if (auto text = node.value<std::string>()) {
      parsed = util::parse_duration(*text);
    }
    if (!parsed) {
      file_error(m_file, node.node()->source(), path,
                 "expected a duration like \"90s\", \"5m\" or a number of seconds");
    }
    return parsed;
  }

  // A duration, or "forever" (the outer nullopt: not set).
  std::optional<std::optional<milliseconds>> patience(const std::string& path) {
    auto node = m_table.at_path(path);
    if (!node)
      return std::nullopt;
    if (auto text = node.value<std::string>(); text && node.is_string()) {
      if (auto parsed = parse_patience(*text))
        return parsed;
    } else if (node.is_integer()) {
      if (auto parsed = util::parse_duration(std::to_string(*node.value<std::int64_t>())))
        return std::optional<milliseconds>(*parsed);
    }
    file_error(m_file, node.node()->source(), path,
               "expected a duration like \"5m\", a number of seconds, or \"forever\"");
  }

  std::optional<std::int64_t> integer(const std::string& path, std::int64_t low,
                                      std::int64_t high) {
    auto node = m_table.at_path(path);
    if (!node)
      return std::nullopt;
    auto value = node.is_integer() ? node.value<std::int64_t>() : std::nullopt;
    if (!value || *value < low || *value > high) {
      file_error(
          m_file, node.node()->source(), path,
          "expected a whole number from " + std::to_string(low) + " to " + std::to_string(high));
    }
    return value;
  }

  std::optional<bool> boolean(const std::string& path) {
    auto node = m_table.at_path(path);
    if (!node)
      return std::nullopt;
    if (auto value = node.value<bool>(); value && node.is_boolean())
      return *value;
    file_error(m_file, node.node()->source(), path, "expected true or false");
  }

 private:
  void check_table(const toml::table& table, const std::string& prefix,
                   const std::map<std::string, std::vector<std::string>>& known) {
    const auto& allowed = known.at(prefix);
    for (const auto& [key, node] : table) {
      std::string name(key.str());
      std::string full = prefix.empty() ? name : prefix + "." + name;
      if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
        file_error(m_file, node.source(), full,
                   "unknown key (config/clock.toml in the sources lists every key)");
      }
      if (known.count(full)) {
        if (!node.is_table())
          file_error(m_file, node.source(), full, "expected a table");
        check_table(*node.as_table(), full, known);
      }
    }
  }

  fs::path m_file;
  toml::table m_table;
};

std::string validated_namespace(const std::string& ns, const std::string& origin) {
  if (ns.empty())
    return ns;
  try {
    lock::Resource::parse(ns);
  } catch (const Error&) {
    // A NUL (possible in TOML as \u0000) would end the message early (what()
    // is a C string); the logger escapes the other control characters.
    std::string shown;
    for (char c : ns)
      shown += c == '\0' ? std::string("\\x00") : std::string(1, c);
    throw Error(origin == "--namespace" ? ExitCode::usage : ExitCode::config,
                "invalid namespace '" + shown + "' in " + origin +
                    ": use letters, digits, '_', '-' and '.', like dc-eu1");
  }
  return ns;
}

// Reads the file's text; a config file is small, and the permission check
// below needs the descriptor's mode, not the path's (no race with a rename).
std::string read_config_file(const fs::path& file, struct stat& info) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::fstat(fd, &info) != 0) {
    int error = errno;
    if (fd >= 0)
      ::close(fd);
    throw Error(ExitCode::config,
                "cannot read the config file " + file.string() + ": " + std::strerror(error));
  }
  std::string text;
  char buffer[4096];
  ssize_t got;
  while ((got = ::read(fd, buffer, sizeof buffer)) > 0)
    text.append(buffer, static_cast<std::size_t>(got));
  int error = errno;
  ::close(fd);
  if (got < 0) {
    throw Error(ExitCode::config,
                "cannot read the config file " + file.string() + ": " + std::strerror(error));
  }
  return text;
}

// As libpq treats ~/.pgpass: a file that holds a password must be readable by
// its owner alone, or anyone on the host could take the database role.
void check_private(const fs::path& file, const struct stat& info, const Settings& settings) {
  if (!util::has_password(settings.database_url) || (info.st_mode & 077) == 0)
    return;
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(info.st_mode & 07777));
  throw Error(ExitCode::config,
              file.string() + " holds a password and is readable by others (mode " + mode +
                  "); chmod 600 it, or keep the password in ~/.pgpass or " + "CLOCK_DATABASE_URL");
}

// A ping URL's path is its check's secret (whoever has it can report the
// job done): a file holding some that every user of the host may read is
// worth a word, though not a refusal. Its group may: a fleet's
// /etc/clock/clock.toml is shared with the users who run jobs that way.
void warn_shared_ping_urls(const fs::path& file, const struct stat& info, Settings& settings) {
  if (settings.ping_urls.empty() || (info.st_mode & 007) == 0)
    return;
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(info.st_mode & 07777));
  settings.warnings.push_back(
      "the config file " + file.string() + " holds ping URLs and every user may read it (mode " +
      mode + "): anyone on this host can ping those checks as done; chmod o-r " + file.string() +
      " (640, with a group of the users who run jobs, or 600)");
}

void apply_file(Settings& settings, const fs::path& file) {
  struct stat info {};
  std::string text = read_config_file(file, info);
  apply_config_text(settings, text, file);
  check_private(file, info, settings);
  warn_shared_ping_urls(file, info, settings);
}

}  // namespace

void apply_config_text(Settings& settings, std::string_view text, const fs::path& file) {
  toml::table table;
  try {
    table = toml::parse(text, file.string());
  } catch (const toml::parse_error& error) {
    throw Error(ExitCode::config, file.string() + ":" + std::to_string(error.source().begin.line) +
                                      ": invalid TOML: " + std::string(error.description()));
  }
  FileReader reader(file, std::move(table));
  reader.check_known_keys();
  settings.config_file = file;
  // Every key the file sets is its origin, whatever the value.
  for (const char* key : {"database", "database_patience", "namespace", "log_level", "log_format",
                          "lock.ttl", "lock.heartbeat", "lock.kill_after", "lock.leftovers",
                          "postgres.schema", "postgres.connect_timeout", "postgres.watch_lease",
                          "mariadb.galera_max_skew", "gc.history_retention", "gc.batch_size",
                          "sqlite.allow_network_filesystem", "ping.on_skip", "ping.urls"}) {
    if (reader.has(key))
      settings.origins[key] = "config file " + file.string() + " (key " + key + ")";
  }
  if (auto v = reader.string("database"))
    settings.database_url = *v;
  if (auto v = reader.patience("database_patience"))
    settings.database_patience = *v;
  if (auto v = reader.string("namespace")) {
    settings.ns = validated_namespace(*v, file.string());
    settings.ns_given = true;
  }
  if (auto v = reader.string("log_level"))
    settings.log_level = *v;
  if (auto v = reader.string("log_format")) {
    if (*v != "text" && *v != "json") {
      throw Error(ExitCode::config, file.string() + ": log_format: expected \"text\" or \"json\"");
    }
    settings.log_format = *v == "json" ? LogFormat::json : LogFormat::text;
  }
  if (auto v = reader.duration("lock.ttl"))
    settings.ttl = *v;
  if (auto v = reader.duration("lock.heartbeat"))
    settings.heartbeat = *v;
  if (auto v = reader.duration("lock.kill_after"))
    settings.kill_after = *v;
  if (auto v = reader.string("lock.leftovers")) {
    if (*v != "kill" && *v != "wait") {
      throw Error(ExitCode::config, file.string() +
                                        ": lock.leftovers: expected \"kill\" or \"wait\" (what "
                                        "clock run does with processes its command leaves)");
    }
    settings.leftovers_wait = *v == "wait";
  }
  if (auto v = reader.string("postgres.schema"))
    settings.pg_schema = *v;
  if (auto v = reader.duration("postgres.connect_timeout"))
    settings.connect_timeout = *v;
  if (auto v = reader.boolean("postgres.watch_lease"))
    settings.watch_lease = *v;
  if (auto v = reader.duration("mariadb.galera_max_skew"))
    settings.galera_max_skew = *v;
  if (auto v = reader.duration("gc.history_retention"))
    settings.history_retention = *v;
  if (auto v = reader.integer("gc.batch_size", 1, 1'000'000)) {
    settings.gc_batch_size = static_cast<int>(*v);
  }
  if (auto v = reader.boolean("sqlite.allow_network_filesystem")) {
    settings.allow_network_filesystem = *v;
  }
  if (auto v = reader.string("ping.on_skip")) {
    if (*v != "none" && *v != "log")
      throw Error(ExitCode::config, file.string() + ": ping.on_skip: expected \"none\" or \"log\"");
    settings.ping_log_skips = *v == "log";
  }
  settings.ping_urls = reader.ping_urls();
}

namespace {

void check_log_level(const std::string& level) {
  static const char* k_levels[] = {"trace", "debug", "info", "warn", "error", "off"};
  for (const char* known : k_levels) {
    if (level == known)
      return;
  }
  throw Error(ExitCode::config, "invalid log level '" + level +
                                    "' in CLOCK_LOG_LEVEL or config"
                                    ": use trace, debug, info, warn, error or off");
}

}  // namespace

Environment process_environment() {
  Environment env;
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string_view text(*entry);
    auto equals = text.find('=');
    if (equals == std::string_view::npos)
      continue;
    auto name = text.substr(0, equals);
    if (name.starts_with("CLOCK_") || name.starts_with("XDG_") || name == "HOME") {
      env.emplace(name, text.substr(equals + 1));
    }
  }
  return env;
}

namespace {

// An XDG base directory variable: the XDG spec says a relative value is
// invalid and must be ignored (else the database would follow the working
// directory).
std::optional<std::string> xdg_folder(const Environment& env, const std::string& name) {
  auto value = lookup(env, name);
  if (value && !value->starts_with('/'))
    return std::nullopt;
  return value;
}

}  // namespace

std::string default_database_url(const Environment& env) {
  auto state = xdg_folder(env, "XDG_STATE_HOME").value_or(home(env) + "/.local/state");
  return "sqlite:" + state + "/clock/clock.db";
}

fs::path user_config_file(const Environment& env) {
  auto config_home = xdg_folder(env, "XDG_CONFIG_HOME").value_or(home(env) + "/.config");
  return fs::path(config_home) / "clock/clock.toml";
}

std::optional<fs::path> locate_config_file(const Flags& flags, const Environment& env) {
  auto explicit_file = flags.config_file ? flags.config_file : lookup(env, "CLOCK_CONFIG");
  if (explicit_file) {
    std::error_code error;
    if (!fs::is_regular_file(*explicit_file, error)) {
      throw Error(ExitCode::config, "cannot read the config file " + *explicit_file +
                                        ": it does not exist or is not a file");
    }
    return fs::path(*explicit_file);
  }
  for (fs::path candidate : {user_config_file(env), fs::path("/etc/clock/clock.toml")}) {
    // Not there (ENOENT, ENOTDIR) clears the error: the next is tried. A
    // folder this user may not search (EACCES) leaves it unknown whether the
    // file is there; it may be, and resolve() reads it or says why not.
    std::error_code error;
    if (fs::exists(candidate, error) || error)
      return candidate;
  }
  return std::nullopt;
}

namespace {

// A config file that may be there but that this user cannot read, e.g. a
// root-only /etc/clock/clock.toml holding the fleet's password. It may name
// the shared database: going on with the local default would lock where no
// other host looks, so it is an error, unless the database is named anyway.
void skip_unreadable_file(Settings& settings, const fs::path& file, int error,
                          bool database_named) {
  struct stat info {};
  bool folder = error == EACCES && ::stat(file.c_str(), &info) != 0;
  std::string reason =
      file.string() + ": " + std::strerror(error) + (folder ? " on a folder of its path" : "");
  if (database_named) {
    settings.warnings.push_back("skipping the config file " + reason +
                                " (name one with --config or CLOCK_CONFIG)");
    return;
  }
  throw Error(ExitCode::config,
              "cannot read the config file " + reason +
                  "; it may name the shared database, so clock does not fall back to a local "
                  "one: make it readable to this user's group (chmod 640, with any password "
                  "moved to ~/.pgpass: a file holding one must be 0600), name another with "
                  "--config, or name the database with --database or CLOCK_DATABASE_URL");
}

}  // namespace

Settings resolve(const Flags& flags, const Environment& env) {
  Settings settings;
  if (auto file = locate_config_file(flags, env)) {
    bool named = flags.config_file || lookup(env, "CLOCK_CONFIG");
    if (named || ::access(file->c_str(), R_OK) == 0) {
      if (!named)
        check_config_file_ownership(*file);
      apply_file(settings, *file);
      settings.origins["config_file"] = flags.config_file             ? "--config flag"
                                        : lookup(env, "CLOCK_CONFIG") ? "CLOCK_CONFIG"
                                                                      : "the default search path";
    } else if (int error = errno; error != ENOENT) {
      // A fallback the user did not name (/etc, another user's XDG folder).
      bool database_named = flags.database_url || lookup(env, "CLOCK_DATABASE_URL");
      skip_unreadable_file(settings, *file, error, database_named);
    }
  }

  if (auto v = lookup(env, "CLOCK_DATABASE_URL")) {
    settings.database_url = *v;
    settings.origins["database"] = "CLOCK_DATABASE_URL";
  }
  if (auto v = lookup(env, "CLOCK_NAMESPACE")) {
    settings.ns = validated_namespace(*v, "CLOCK_NAMESPACE");
    settings.ns_given = true;
    settings.origins["namespace"] = "CLOCK_NAMESPACE";
  }
  if (auto v = lookup(env, "CLOCK_OWNER")) {
    settings.owner = *v;
    settings.origins["owner"] = "CLOCK_OWNER";
  }
  if (auto v = lookup(env, "CLOCK_LOG_LEVEL")) {
    settings.log_level = *v;
    settings.origins["log_level"] = "CLOCK_LOG_LEVEL";
  }

  if (flags.database_url) {
    settings.database_url = *flags.database_url;
    settings.origins["database"] = "--database flag";
  }
  if (flags.ns) {
    settings.ns = validated_namespace(*flags.ns, "--namespace");
    settings.ns_given = true;
    settings.origins["namespace"] = "--namespace flag";
  }
  if (flags.log_format) {
    settings.origins["log_format"] = "--log-format flag";
    if (*flags.log_format != "text" && *flags.log_format != "json") {
      throw Error(ExitCode::usage,
                  "invalid --log-format '" + *flags.log_format + "': use text or json");
    }
    settings.log_format = *flags.log_format == "json" ? LogFormat::json : LogFormat::text;
  }

  check_log_level(settings.log_level);
  if (settings.database_url.empty()) {
    settings.database_url = default_database_url(env);
    settings.database_is_default = true;
    settings.origins.erase("database");  // an empty URL in the file means the default
  }
  return settings;
}

std::string origin_of(const Settings& settings, const std::string& key) {
  if (auto it = settings.origins.find(key); it != settings.origins.end())
    return it->second;
  return key == "database" ? "default (per-user SQLite)" : "default";
}

void apply_owner_flag(Settings& settings, const std::optional<std::string>& owner_flag) {
  if (!owner_flag)
    return;
  // --owner ID names the owner whose ID.SECRET CLOCK_OWNER holds: the secret
  // then stays out of argv, where any user of the host could read it.
  if (settings.owner && owner_flag->find('.') == std::string::npos) {
    auto id = lock::OwnerId::parse(*owner_flag).str();
    const std::string& from_env = *settings.owner;
    bool same = from_env.size() > id.size() && from_env[id.size()] == '.' &&
                std::equal(id.begin(), id.end(), from_env.begin(), [](char a, char b) {
                  return a == std::tolower(static_cast<unsigned char>(b));
                });
    if (same)
      return;
  }
  settings.owner = *owner_flag;
  settings.origins["owner"] = "--owner flag";
}

}  // namespace clk::config
