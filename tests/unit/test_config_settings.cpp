// Settings resolution (man clock, DATABASE URLS): flags beat the environment, which beats the
// TOML file, which beats the built-in defaults; a bad file is a config error
// (exit 78) that names the file and the line.
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <stdlib.h>
#include <string>
#include <unistd.h>

#include <doctest/doctest.h>

#include "config/settings.hpp"
#include "error.hpp"
#include "lock/lease.hpp"
#include "run/options.hpp"
#include "store/store.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using clk::Error;
using clk::ExitCode;
using clk::config::Environment;
using clk::config::Flags;
using clk::config::LogFormat;
using clk::config::resolve;
using clk::config::Settings;
using std::chrono::milliseconds;

namespace {

// A temporary directory, removed with everything in it at scope exit. It
// stands in for HOME and the XDG directories so the user's files are never read.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "clock-unit-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    m_path = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(m_path, ignored);
  }
  const fs::path& path() const { return m_path; }

  // Writes `text` to `relative` (creating directories) and returns its path.
  fs::path write(const fs::path& relative, const std::string& text) const {
    fs::path file = m_path / relative;
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
    return file;
  }

  // An environment that points HOME and XDG_CONFIG_HOME here, and nothing else.
  Environment environment() const {
    return {{"HOME", (m_path / "home").string()},
            {"XDG_CONFIG_HOME", (m_path / "xdg-config").string()},
            {"XDG_STATE_HOME", (m_path / "xdg-state").string()}};
  }

 private:
  fs::path m_path;
};

// Flags that read `file` and nothing else (so /etc/clock/clock.toml never interferes).
Flags reading(const fs::path& file) {
  Flags flags;
  flags.config_file = file.string();
  return flags;
}

// The clk::Error that resolve throws, or none if it accepts the configuration.
std::optional<Error> resolve_error(const Flags& flags, const Environment& env) {
  try {
    resolve(flags, env);
  } catch (const Error& e) {
    return e;
  }
  return std::nullopt;
}

// The code of that error, or none.
std::optional<ExitCode> error_code(const Flags& flags, const Environment& env) {
  auto error = resolve_error(flags, env);
  return error ? std::optional<ExitCode>(error->code()) : std::nullopt;
}

// True if `message` points at line `line`: "line 3", "line: 3" or "file:3".
bool mentions_line(const std::string& message, int line) {
  std::regex pattern("(line:? " + std::to_string(line) + "\\b|:" + std::to_string(line) + "\\b)");
  return std::regex_search(message, pattern);
}

const char* k_full_file = R"(# every key, none at its default
database = "sqlite:/from/file.db"
database_patience = "20m"
namespace = "file-ns"
log_level = "debug"
log_format = "json"

[lock]
ttl = "45s"
heartbeat = "5s"
kill_after = "3s"

[postgres]
schema = "locks"
connect_timeout = "2s"
watch_lease = true

[gc]
history_retention = "30d"
batch_size = 50

[sqlite]
allow_network_filesystem = true
)";

}  // namespace

TEST_SUITE("config::settings") {
  TEST_CASE("keys set nowhere take the built-in defaults") {
    TempDir dir;
    Environment env = dir.environment();
    Settings s = resolve(reading(dir.write("clock.toml", "")), env);
    CHECK((s.database_url.empty() || s.database_url == clk::config::default_database_url(env)));
    CHECK(s.ns == "");
    CHECK_FALSE(s.ns_given);
    CHECK_FALSE(s.owner.has_value());
    CHECK(s.log_level == "warn");
    CHECK(s.log_format == LogFormat::text);
    CHECK(s.ttl == 90s);
    CHECK_FALSE(s.heartbeat.has_value());
    CHECK_FALSE(s.kill_after.has_value());
    CHECK(s.connect_timeout == 5s);
    CHECK(s.database_patience == std::optional<milliseconds>(5min));
    CHECK(s.pg_schema == "clock");
    CHECK_FALSE(s.watch_lease);
    CHECK_FALSE(s.history_retention.has_value());
    CHECK(s.gc_batch_size == 1000);
    CHECK_FALSE(s.allow_network_filesystem);
  }

  TEST_CASE("the config file beats the defaults, key by key") {
    TempDir dir;
    fs::path file = dir.write("clock.toml", k_full_file);
    Settings s = resolve(reading(file), dir.environment());
    CHECK(s.database_url == "sqlite:/from/file.db");
    CHECK(s.database_patience == std::optional<milliseconds>(20min));
    CHECK(s.ns == "file-ns");
    CHECK(s.ns_given);
    CHECK(s.log_level == "debug");
    CHECK(s.log_format == LogFormat::json);
    CHECK(s.ttl == 45s);
    REQUIRE(s.heartbeat.has_value());
    CHECK(*s.heartbeat == 5s);
    REQUIRE(s.kill_after.has_value());
    CHECK(*s.kill_after == 3s);
    CHECK(s.pg_schema == "locks");
    CHECK(s.connect_timeout == 2s);
    CHECK(s.watch_lease);
    REQUIRE(s.history_retention.has_value());
    CHECK(*s.history_retention == milliseconds(30LL * 86'400'000));
    CHECK(s.gc_batch_size == 50);
    CHECK(s.allow_network_filesystem);
    CHECK(fs::equivalent(s.config_file, file));
  }

  TEST_CASE("database_patience: a duration, seconds, or forever; anything else names the key") {
    TempDir dir;
    auto patience = [&](const std::string& value) {
      return resolve(reading(dir.write("clock.toml", "database_patience = " + value + "\n")),
                     dir.environment())
          .database_patience;
    };
    CHECK(patience("\"forever\"") == std::nullopt);
    CHECK(patience("90") == std::optional<milliseconds>(90s));
    CHECK(patience("\"1h\"") == std::optional<milliseconds>(1h));
    try {
      patience("\"soon\"");
      FAIL("accepted database_patience = \"soon\"");
    } catch (const clk::Error& error) {
      CHECK(std::string(error.what()).find("database_patience") != std::string::npos);
      CHECK(error.code() == clk::ExitCode::config);
    }
  }

  TEST_CASE("the environment beats the config file") {
    TempDir dir;
    Environment env = dir.environment();
    env["CLOCK_DATABASE_URL"] = "sqlite:/from/env.db";
    env["CLOCK_NAMESPACE"] = "env-ns";
    env["CLOCK_LOG_LEVEL"] = "error";
    env["CLOCK_OWNER"] = "00000000-0000-4000-8000-0000000000e1";
    Settings s = resolve(reading(dir.write("clock.toml", k_full_file)), env);
    CHECK(s.database_url == "sqlite:/from/env.db");
    CHECK(s.ns == "env-ns");
    CHECK(s.ns_given);
    CHECK(s.log_level == "error");
    REQUIRE(s.owner.has_value());
    CHECK(*s.owner == "00000000-0000-4000-8000-0000000000e1");
    CHECK(s.ttl == 45s);  // no variable for it: the file still counts
  }

  TEST_CASE("flags beat the environment") {
    TempDir dir;
    Environment env = dir.environment();
    env["CLOCK_DATABASE_URL"] = "sqlite:/from/env.db";
    env["CLOCK_NAMESPACE"] = "env-ns";
    env["CLOCK_LOG_LEVEL"] = "error";
    env["CLOCK_OWNER"] = "00000000-0000-4000-8000-0000000000e1";
    Flags flags = reading(dir.write("clock.toml", k_full_file));
    flags.database_url = "sqlite:/from/flag.db";
    flags.ns = "flag-ns";
    flags.log_format = "text";
    Settings s = resolve(flags, env);
    CHECK(s.database_url == "sqlite:/from/flag.db");
    CHECK(s.ns == "flag-ns");
    CHECK(s.log_format == LogFormat::text);
  }

  TEST_CASE("--owner beats CLOCK_OWNER, and CLOCK_OWNER stands without it") {
    TempDir dir;
    Environment env = dir.environment();
    env["CLOCK_OWNER"] = "00000000-0000-4000-8000-0000000000e1";
    Settings s = resolve(reading(dir.write("clock.toml", "")), env);
    clk::config::apply_owner_flag(s, std::nullopt);
    REQUIRE(s.owner.has_value());
    CHECK(*s.owner == "00000000-0000-4000-8000-0000000000e1");
    clk::config::apply_owner_flag(s, std::string("00000000-0000-4000-8000-0000000000f1"));
    CHECK(*s.owner == "00000000-0000-4000-8000-0000000000f1");
  }

  TEST_CASE("--owner ID keeps CLOCK_OWNER's secret for the same id, and only for it") {
    TempDir dir;
    Environment env = dir.environment();
    const std::string id = "00000000-0000-4000-8000-0000000000e1";
    const std::string secret = "00112233445566778899aabbccddeeff";
    env["CLOCK_OWNER"] = id + "." + secret;
    Settings s = resolve(reading(dir.write("clock.toml", "")), env);
    clk::config::apply_owner_flag(s, id);
    CHECK(*s.owner == id + "." + secret);
    // The id in either case names the same owner.
    s = resolve(reading(dir.write("clock.toml", "")), env);
    clk::config::apply_owner_flag(s, std::string("00000000-0000-4000-8000-0000000000E1"));
    CHECK(*s.owner == id + "." + secret);
    // Another id, or a secret of its own, is the flag's alone.
    s = resolve(reading(dir.write("clock.toml", "")), env);
    clk::config::apply_owner_flag(s, std::string("00000000-0000-4000-8000-0000000000f1"));
    CHECK(*s.owner == "00000000-0000-4000-8000-0000000000f1");
    s = resolve(reading(dir.write("clock.toml", "")), env);
    clk::config::apply_owner_flag(s, id + ".ffffffffffffffffffffffffffffffff");
    CHECK(*s.owner == id + ".ffffffffffffffffffffffffffffffff");
    // A bad id is a usage error, whatever CLOCK_OWNER holds.
    s = resolve(reading(dir.write("clock.toml", "")), env);
    try {
      clk::config::apply_owner_flag(s, std::string("not-an-id"));
      FAIL("no error");
    } catch (const Error& error) {
      CHECK(error.code() == ExitCode::usage);
    }
  }

  TEST_CASE("the default TTL is the one the requests carry") {
    TempDir dir;
    Settings s = resolve(reading(dir.write("clock.toml", "")), dir.environment());
    CHECK(s.ttl == clk::lock::k_default_ttl);
    CHECK(clk::store::LockRequest{}.ttl == clk::lock::k_default_ttl);
    CHECK(clk::store::RenewRequest{}.ttl == clk::lock::k_default_ttl);
    CHECK(clk::run::RunOptions{}.ttl == clk::lock::k_default_ttl);
  }

  TEST_CASE("each key falls through to the highest layer that sets it") {
    TempDir dir;
    Environment env = dir.environment();
    env["CLOCK_NAMESPACE"] = "env-ns";  // env over file
    env["CLOCK_LOG_LEVEL"] = "error";   // env over file
    Flags flags = reading(dir.write("clock.toml",
                                    "database = \"sqlite:/from/file.db\"\n"
                                    "namespace = \"file-ns\"\n"
                                    "log_level = \"info\"\n"));
    flags.ns = "flag-ns";  // flag over env
    Settings s = resolve(flags, env);
    CHECK(s.database_url == "sqlite:/from/file.db");  // file only
    CHECK(s.ns == "flag-ns");
    CHECK(s.log_level == "error");
    CHECK(s.ttl == 90s);  // default
  }

  TEST_CASE("each key's origin is the layer that set it, the config file with its key") {
    TempDir dir;
    Environment env = dir.environment();
    env["CLOCK_LOG_LEVEL"] = "error";
    fs::path file = dir.write("clock.toml",
                              "database = \"sqlite:/from/file.db\"\n"
                              "namespace = \"file-ns\"\n"
                              "[lock]\nttl = \"5m\"\n");
    Flags flags = reading(file);
    flags.ns = "flag-ns";
    Settings s = resolve(flags, env);
    using clk::config::origin_of;
    CHECK(origin_of(s, "database") == "config file " + file.string() + " (key database)");
    CHECK(origin_of(s, "lock.ttl") == "config file " + file.string() + " (key lock.ttl)");
    CHECK(origin_of(s, "namespace") == "--namespace flag");
    CHECK(origin_of(s, "log_level") == "CLOCK_LOG_LEVEL");
    CHECK(origin_of(s, "lock.heartbeat") == "default");

    env["CLOCK_DATABASE_URL"] = "sqlite:/from/env.db";
    CHECK(origin_of(resolve(flags, env), "database") == "CLOCK_DATABASE_URL");
    flags.database_url = "sqlite:/from/flag.db";
    CHECK(origin_of(resolve(flags, env), "database") == "--database flag");
    CHECK(origin_of(resolve({}, dir.environment()), "database") == "default (per-user SQLite)");
  }

  TEST_CASE("an empty namespace flag still counts as given") {
    TempDir dir;
    Environment env = dir.environment();
    env["CLOCK_NAMESPACE"] = "env-ns";
    Flags flags = reading(dir.write("clock.toml", ""));
    flags.ns = "";
    Settings s = resolve(flags, env);
    CHECK(s.ns == "");
    CHECK(s.ns_given);
  }

  TEST_CASE("CLOCK_CONFIG names the file when --config is absent") {
    TempDir dir;
    Environment env = dir.environment();
    env["CLOCK_CONFIG"] = dir.write("env.toml", "namespace = \"from-clock-config\"\n").string();
    CHECK(resolve(Flags{}, env).ns == "from-clock-config");
  }

  TEST_CASE("--config beats CLOCK_CONFIG") {
    TempDir dir;
    Environment env = dir.environment();
    env["CLOCK_CONFIG"] = dir.write("env.toml", "namespace = \"from-env-file\"\n").string();
    Flags flags = reading(dir.write("flag.toml", "namespace = \"from-flag-file\"\n"));
    CHECK(resolve(flags, env).ns == "from-flag-file");
  }

  TEST_CASE("the XDG config file is read when no file is named") {
    TempDir dir;
    Environment env = dir.environment();
    fs::path file = dir.write("xdg-config/clock/clock.toml", "namespace = \"from-xdg\"\n");
    auto located = clk::config::locate_config_file(Flags{}, env);
    REQUIRE(located.has_value());
    CHECK(fs::equivalent(*located, file));
    CHECK(resolve(Flags{}, env).ns == "from-xdg");
  }

  TEST_CASE("without XDG_CONFIG_HOME the file under ~/.config is read") {
    TempDir dir;
    Environment env = dir.environment();
    env.erase("XDG_CONFIG_HOME");
    fs::path file = dir.write("home/.config/clock/clock.toml", "namespace = \"from-home\"\n");
    auto located = clk::config::locate_config_file(Flags{}, env);
    REQUIRE(located.has_value());
    CHECK(fs::equivalent(*located, file));
  }

  TEST_CASE("a --config file that does not exist is a config error") {
    TempDir dir;
    auto e = resolve_error(reading(dir.path() / "missing.toml"), dir.environment());
    REQUIRE_MESSAGE(e.has_value(), "resolve accepted the configuration");
    CHECK(e->code() == ExitCode::config);
    CHECK(std::string(e->what()).find("missing.toml") != std::string::npos);
  }

  TEST_CASE("a CLOCK_CONFIG file that does not exist is a config error") {
    TempDir dir;
    Environment env = dir.environment();
    env["CLOCK_CONFIG"] = (dir.path() / "missing.toml").string();
    CHECK(error_code(Flags{}, env) == ExitCode::config);
  }

  TEST_CASE("a config path that cannot be read as a file is a config error") {
    TempDir dir;
    fs::create_directories(dir.path() / "a-directory.toml");
    auto e = resolve_error(reading(dir.path() / "a-directory.toml"), dir.environment());
    REQUIRE_MESSAGE(e.has_value(), "resolve accepted the configuration");
    CHECK(e->code() == ExitCode::config);
  }

  TEST_CASE("an unknown key is a config error naming the file and line") {
    TempDir dir;
    fs::path file = dir.write("clock.toml", "# comment\nnamespace = \"ok\"\ncolour = \"blue\"\n");
    auto e = resolve_error(reading(file), dir.environment());
    REQUIRE_MESSAGE(e.has_value(), "resolve accepted the configuration");
    std::string message = e->what();
    CAPTURE(message);
    CHECK(e->code() == ExitCode::config);
    CHECK(message.find(file.string()) != std::string::npos);
    CHECK(mentions_line(message, 3));
    CHECK(message.find("colour") != std::string::npos);
  }

  TEST_CASE("an unknown key inside a known table is a config error") {
    TempDir dir;
    fs::path file = dir.write("clock.toml", "[lock]\nttl = \"30s\"\ntll = \"30s\"\n");
    auto e = resolve_error(reading(file), dir.environment());
    REQUIRE_MESSAGE(e.has_value(), "resolve accepted the configuration");
    std::string message = e->what();
    CAPTURE(message);
    CHECK(e->code() == ExitCode::config);
    CHECK(mentions_line(message, 3));
    CHECK(message.find("tll") != std::string::npos);
  }

  TEST_CASE("[ping] gives on_skip and each resource's URL; a bad URL names file, line and key") {
    TempDir dir;
    Settings s = resolve(reading(dir.write("clock.toml",
                                           "[ping]\non_skip = \"log\"\n"
                                           "[ping.urls]\n\"db.backup\" = "
                                           "\"https://hc-ping.com/abc\"\n")),
                         dir.environment());
    CHECK(s.ping_log_skips);
    CHECK(s.ping_urls ==
          std::map<std::string, std::string>{{"db.backup", "https://hc-ping.com/abc"}});
    fs::path bad = dir.write("bad.toml", "[ping.urls]\n\"db\" = \"ftp://x/y\"\n");
    auto e = resolve_error(reading(bad), dir.environment());
    REQUIRE(e.has_value());
    std::string message = e->what();
    CAPTURE(message);
    CHECK(e->code() == ExitCode::config);
    CHECK(mentions_line(message, 2));
    CHECK(message.find("ping.urls.db") != std::string::npos);
    fs::path bad_name = dir.write("name.toml", "[ping.urls]\n\"a..b\" = \"https://x/y\"\n");
    CHECK(error_code(reading(bad_name), dir.environment()) == ExitCode::config);
    fs::path bad_skip = dir.write("skip.toml", "[ping]\non_skip = \"fail\"\n");
    CHECK(error_code(reading(bad_skip), dir.environment()) == ExitCode::config);
  }

  TEST_CASE("an unknown table is a config error") {
    TempDir dir;
    fs::path file = dir.write("clock.toml", "[locks]\nttl = \"30s\"\n");
    CHECK(error_code(reading(file), dir.environment()) == ExitCode::config);
  }

  TEST_CASE("a bad duration is a config error naming the file and line") {
    TempDir dir;
    fs::path file = dir.write("clock.toml", "namespace = \"ok\"\n\n[lock]\nttl = \"5x\"\n");
    auto e = resolve_error(reading(file), dir.environment());
    REQUIRE_MESSAGE(e.has_value(), "resolve accepted the configuration");
    std::string message = e->what();
    CAPTURE(message);
    CHECK(e->code() == ExitCode::config);
    CHECK(message.find(file.string()) != std::string::npos);
    CHECK(mentions_line(message, 4));
  }

  TEST_CASE("a value of the wrong type is a config error naming the line") {
    TempDir dir;
    fs::path file = dir.write("clock.toml", "[gc]\nbatch_size = \"many\"\n");
    auto e = resolve_error(reading(file), dir.environment());
    REQUIRE_MESSAGE(e.has_value(), "resolve accepted the configuration");
    std::string message = e->what();
    CAPTURE(message);
    CHECK(e->code() == ExitCode::config);
    CHECK(mentions_line(message, 2));
  }

  TEST_CASE("a bad log format in the file is a config error") {
    TempDir dir;
    fs::path file = dir.write("clock.toml", "log_format = \"xml\"\n");
    CHECK(error_code(reading(file), dir.environment()) == ExitCode::config);
  }

  TEST_CASE("a file that is not TOML is a config error naming the file and line") {
    TempDir dir;
    fs::path file = dir.write("clock.toml", "namespace = \"ok\"\nthis is not toml\n");
    auto e = resolve_error(reading(file), dir.environment());
    REQUIRE_MESSAGE(e.has_value(), "resolve accepted the configuration");
    std::string message = e->what();
    CAPTURE(message);
    CHECK(e->code() == ExitCode::config);
    CHECK(message.find(file.string()) != std::string::npos);
    CHECK(mentions_line(message, 2));
    CHECK(message.find('\n') == std::string::npos);
  }

  TEST_CASE("a bad flag value is a usage error") {
    TempDir dir;
    Flags flags = reading(dir.write("clock.toml", ""));
    flags.log_format = "xml";
    CHECK(error_code(flags, dir.environment()) == ExitCode::usage);
  }

  TEST_CASE("the default database lives under XDG_STATE_HOME, else ~/.local/state") {
    CHECK(clk::config::default_database_url({{"XDG_STATE_HOME", "/state"}, {"HOME", "/home/u"}}) ==
          "sqlite:/state/clock/clock.db");
    CHECK(clk::config::default_database_url({{"HOME", "/home/u"}}) ==
          "sqlite:/home/u/.local/state/clock/clock.db");
  }

  TEST_CASE("process_environment reads the CLOCK_ variables of the process") {
    const char* previous = std::getenv("CLOCK_NAMESPACE");
    std::string saved = previous ? previous : "";
    setenv("CLOCK_NAMESPACE", "from-the-process", 1);
    Environment env = clk::config::process_environment();
    if (previous) {
      setenv("CLOCK_NAMESPACE", saved.c_str(), 1);
    } else {
      unsetenv("CLOCK_NAMESPACE");
    }
    CHECK(env["CLOCK_NAMESPACE"] == "from-the-process");
  }

  TEST_CASE(
      "a config file with a password that others may read is a config error naming its mode") {
    TempDir dir;
    fs::path file = dir.write("clock.toml", "database = \"postgresql://u:s3cret@db/clock\"\n");
    for (auto mode : {0644, 0640, 0604, 0620, 0660, 0666}) {
      CAPTURE(mode);
      fs::permissions(file, static_cast<fs::perms>(mode));
      auto e = resolve_error(reading(file), dir.environment());
      REQUIRE_MESSAGE(e.has_value(), "resolve accepted the configuration");
      std::string message = e->what();
      CAPTURE(message);
      CHECK(e->code() == ExitCode::config);
      CHECK(message.find(file.string()) != std::string::npos);
      char octal[16];
      std::snprintf(octal, sizeof octal, "(mode %04o)", static_cast<unsigned>(mode));
      CHECK(message.find(octal) != std::string::npos);
      CHECK(message.find("s3cret") == std::string::npos);
    }
    for (auto mode : {0600, 0400}) {
      fs::permissions(file, static_cast<fs::perms>(mode));
      CHECK(resolve(reading(file), dir.environment()).database_url ==
            "postgresql://u:s3cret@db/clock");
    }
  }

  TEST_CASE("a keyword string with password= counts as a password; none may be world-readable") {
    TempDir dir;
    fs::path with = dir.write("with.toml", "database = \"host=db password='a b'\"\n");
    fs::permissions(with, static_cast<fs::perms>(0644));
    CHECK(error_code(reading(with), dir.environment()) == ExitCode::config);
    fs::path without = dir.write("without.toml", "database = \"postgresql://u@db/clock\"\n");
    fs::permissions(without, static_cast<fs::perms>(0644));
    CHECK(error_code(reading(without), dir.environment()) == std::nullopt);
  }

  TEST_CASE("apply_config_text loads a buffer as the file would be") {
    Settings settings;
    clk::config::apply_config_text(settings, k_full_file, "/etc/clock/clock.toml");
    CHECK(settings.ns == "file-ns");
    CHECK(settings.ttl == 45s);
    CHECK(settings.config_file == "/etc/clock/clock.toml");
  }
}
