// What a newcomer needs to see: `-n` as quiet as `flock -n` under
// cron, which database a command used and why (`-v`, `clock config`, the
// status header), and `clock check`, which exits 0 when a host is set up.
#include <filesystem>
#include <string>

#include <doctest/doctest.h>

#include "harness.hpp"
#include "postgres_tools.hpp"

using namespace clk::test;

namespace {

std::string backend_word(const TestEnv& env) {
  const std::string name = env.backend().name();
  return name == "sqlite" ? "SQLite" : name == "mariadb" ? "MariaDB" : "PostgreSQL";
}

// The -v line that names the database, or "" when there is none.
std::string database_line(const Result& result) {
  for (const auto& line : result.err_lines()) {
    if (line.find("database: ") != std::string::npos)
      return line;
  }
  return "";
}

}  // namespace

TEST_SUITE("setup visibility") {
  TEST_CASE("-n on a busy resource with stderr not a terminal prints nothing and exits 75") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "job", "--ttl", "5m"});

    Result run = env.clock({"run", "-n", "-r", "job", "--", "true"});
    CHECK_EXIT(run, 75);
    CHECK(run.err.empty());
    Result acquire = env.clock({"acquire", "-n", "-r", "job"});
    CHECK_EXIT(acquire, 75);
    CHECK(acquire.err.empty());

    // -v shows the line as before: who is in the way.
    Result verbose = env.clock({"-v", "run", "-n", "-r", "job", "--", "true"});
    CHECK_EXIT(verbose, 75);
    CHECK(verbose.err.find("error: not acquired") != std::string::npos);
    CHECK(verbose.err.find(holder.owner) != std::string::npos);

    // The quiet skip is still history.
    Result history = env.clock({"history", "job", "--format", "json"});
    CHECK_EXIT(history, 0);
    CHECK(history.out.find("\"skipped\"") != std::string::npos);

    // A wait that runs out was not asked for: it still says so.
    Result waited = env.clock({"acquire", "-w", "300ms", "-r", "job"});
    CHECK_EXIT(waited, 75);
    CHECK(waited.err.find("not acquired") != std::string::npos);
  }

  TEST_CASE("-v names the backend, the database and where it came from, for each origin") {
    TestEnv env;
    const std::string url = env.url();
    const std::string from = "database: " + backend_word(env) + " " + url + ", from ";

    Result flag = env.clock({"-v", "--database", url, "status"}, {{"CLOCK_DATABASE_URL", k_unset}});
    CHECK(database_line(flag).find(from + "--database flag") != std::string::npos);

    Result environment = env.clock({"-v", "status"});
    CHECK(database_line(environment).find(from + "CLOCK_DATABASE_URL") != std::string::npos);

    fs::path file = env.dir() / "xdg-config" / "clock" / "clock.toml";
    fs::create_directories(file.parent_path());
    write_file(file, "database = '" + url + "'\n");
    fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write);
    Result config = env.clock({"-v", "status"}, {{"CLOCK_DATABASE_URL", k_unset}});
    INFO(config.describe());
    CHECK(database_line(config).find(from + "config file " + file.string() + " (key database)") !=
          std::string::npos);
    fs::remove(file);

    Result fallback = env.clock({"-v", "status"}, {{"CLOCK_DATABASE_URL", k_unset}});
    INFO(fallback.describe());
    std::string default_url = "sqlite:" + (env.dir() / "xdg-state/clock/clock.db").string();
    CHECK(database_line(fallback) ==
          "clock: info: database: SQLite " + default_url + ", from default (per-user SQLite)");

    // Without -v: nothing.
    CHECK(database_line(env.clock({"status"})).empty());
  }

  TEST_CASE("-v and clock config mask the database password") {
    TestEnv env;
    const std::string url = "postgresql://clock:hunter2@127.0.0.1:1/clock?connect_timeout=1";
    Result config = env.clock({"config"}, {{"CLOCK_DATABASE_URL", url}});
    CHECK_EXIT(config, 0);
    CHECK(config.out.find("hunter2") == std::string::npos);
    CHECK(config.out.find("postgresql://clock:****@127.0.0.1:1/clock") != std::string::npos);
  }

  TEST_CASE("clock config lists each setting with its value and origin") {
    TestEnv env;
    fs::path file = env.path("clock.toml");
    write_file(file, "namespace = 'dc-eu1'\n[lock]\nttl = '5m'\n");
    Result table = env.clock({"--config", file.string(), "config"});
    CHECK_EXIT(table, 0);
    INFO(table.out);
    CHECK(table.out.rfind("KEY", 0) == 0);
    CHECK(table.out.find("CLOCK_DATABASE_URL") != std::string::npos);
    CHECK(table.out.find("config file " + file.string() + " (key lock.ttl)") != std::string::npos);
    CHECK(table.out.find("--config flag") != std::string::npos);

    Result json = env.clock(
        {"--config", file.string(), "--namespace", "dc-us1", "config", "--format", "json"});
    CHECK_EXIT(json, 0);
    auto settings = nlohmann::json::parse(json.out);
    std::map<std::string, nlohmann::json> by_key;
    for (const auto& setting : settings)
      by_key[setting["key"]] = setting;
    CHECK(by_key["database"]["value"] == env.url());
    CHECK(by_key["database"]["origin"] == "CLOCK_DATABASE_URL");
    CHECK(by_key["namespace"]["value"] == "dc-us1");
    CHECK(by_key["namespace"]["origin"] == "--namespace flag");
    CHECK(by_key["lock.ttl"]["value"] == "5m");
    CHECK(by_key["lock.heartbeat"]["origin"] == "default");
    CHECK(by_key["config_file"]["value"] == file.string());
  }

  TEST_CASE("clock config lists the ping settings, URLs as scheme and host only") {
    TestEnv env;
    fs::path file = env.path("clock.toml");
    write_file(file,
               "[ping]\non_skip = 'log'\n[ping.urls]\n'db.backup' = "
               "'https://hc-ping.example/0f3c-secret-uuid'\n");
    fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write);
    Result json = env.clock({"--config", file.string(), "config", "--format", "json"});
    CHECK_EXIT(json, 0);
    INFO(json.out);
    std::map<std::string, nlohmann::json> by_key;
    for (const auto& setting : nlohmann::json::parse(json.out))
      by_key[setting["key"]] = setting;
    CHECK(by_key["ping.on_skip"]["value"] == "log");
    CHECK(by_key["ping.on_skip"]["origin"] ==
          "config file " + file.string() + " (key ping.on_skip)");
    CHECK(by_key["ping.urls"]["value"].get<std::string>().find(
              "db.backup = https://hc-ping.example") == 0);
    CHECK(json.out.find("secret-uuid") == std::string::npos);
  }

  TEST_CASE(
      "clock config --init writes a starter file that clock then reads, and keeps a set one") {
    TestEnv env;
    fs::path file = env.path("etc/clock/clock.toml");
    const std::string url = "postgresql://clock_host@db.example/clock";
    Result init = env.clock({"--database", url, "config", "--init", file.string()});
    CHECK_EXIT(init, 0);
    INFO(init.out << init.err);
    CHECK(init.out.find("wrote " + file.string()) != std::string::npos);
    REQUIRE(fs::exists(file));
    CHECK((fs::status(file).permissions() & fs::perms::all) ==
          (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
           fs::perms::others_read));
    // clock reads what it wrote: the database, from the file.
    Result config = env.clock({"--config", file.string(), "config", "--format", "json"},
                              {{"CLOCK_DATABASE_URL", k_unset}});
    CHECK_EXIT(config, 0);
    CHECK(config.out.find(url) != std::string::npos);
    CHECK(config.out.find("(key database)") != std::string::npos);

    // A file that sets a key is left alone (78), whatever is asked.
    std::string before = read_file(file);
    Result again =
        env.clock({"--database", "sqlite:/tmp/other.db", "config", "--init", file.string()});
    CHECK_EXIT(again, 78);
    CHECK(again.err_lines().size() == 1);
    CHECK(again.err.find(file.string()) != std::string::npos);
    CHECK(read_file(file) == before);

    // The package's own file (every key commented out under its table's
    // header) sets nothing, so it is replaced; a URL with a password makes
    // the file private to its owner.
    fs::path package = env.path("package.toml");
    write_file(package, read_file(CLOCK_TEST_PACKAGED_CONFIG));
    REQUIRE(read_file(package).find("\n[lock]\n") != std::string::npos);
    Result replaced = env.clock({"--database", "postgresql://clock_host:s3cret@db.example/clock",
                                 "config", "--init", package.string()});
    CHECK_EXIT(replaced, 0);
    CHECK(replaced.out.find("replaced " + package.string()) != std::string::npos);
    CHECK((fs::status(package).permissions() & fs::perms::all) ==
          (fs::perms::owner_read | fs::perms::owner_write));
    CHECK(replaced.out.find("s3cret") == std::string::npos);

    // A key set under a table counts; so does a file that is not TOML.
    for (const char* text : {"[lock]\nttl = \"5m\"\n", "[lock\nttl = 5m\n"}) {
      CAPTURE(text);
      fs::path kept = env.path("kept.toml");
      write_file(kept, text);
      CHECK_EXIT(env.clock({"--database", url, "config", "--init", kept.string()}), 78);
      CHECK(read_file(kept) == text);
    }
  }

  TEST_CASE("clock check passes on a working set-up, one ok line per check") {
    TestEnv env;
    Result check = env.clock({"check"});
    CHECK_EXIT(check, 0);
    INFO(check.out);
    CHECK(check.out.find("FAIL") == std::string::npos);
    CHECK(check.out.find("ok    database reached") != std::string::npos);
    CHECK(check.out.find("ok    schema current") != std::string::npos);
    CHECK(check.out.find(env.backend().name() == "sqlite"
                             ? "ok    database file writable"
                             : "ok    privileges for clock run") != std::string::npos);
    // It takes no lock and writes no history.
    CHECK(env.clock({"history", "--format", "json"}).out.find("clock-check") == std::string::npos);
  }

  TEST_CASE("clock check names a bad database URL as a configuration problem (78)") {
    TestEnv env;
    Result check = env.clock({"check"}, {{"CLOCK_DATABASE_URL", "mysql2://db/clock"}});
    CHECK_EXIT(check, 78);
    CHECK(check.out.find("FAIL") != std::string::npos);
  }

  TEST_CASE("clock check exits 69 when PostgreSQL cannot be reached" * only_on("postgres")) {
    TestEnv env;
    Result check = env.clock(
        {"check"}, {{"CLOCK_DATABASE_URL", "postgresql://127.0.0.1:1/clock?connect_timeout=1"}});
    CHECK_EXIT(check, 69);
    CHECK(check.out.find("FAIL  database reached") != std::string::npos);
  }

  TEST_CASE("clock check exits 78 for a login without clock_app's privileges" *
            only_on("postgres")) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);
    pg::install_roles(env);
    std::string role = "clock_test_bare_" + std::to_string(::getpid());
    std::string app = "clock_test_app_" + std::to_string(::getpid());
    REQUIRE_EXIT(pg::psql(env, env.url(),
                          "DROP ROLE IF EXISTS " + role + ", " + app + "; CREATE ROLE " + role +
                              " LOGIN; CREATE ROLE " + app + " LOGIN IN ROLE clock_app"),
                 0);
    Result bare = env.clock({"check"}, {{"CLOCK_DATABASE_URL", env.url() + " user=" + role}});
    Result granted = env.clock({"check"}, {{"CLOCK_DATABASE_URL", env.url() + " user=" + app}});
    pg::psql(env, env.url(), "DROP ROLE IF EXISTS " + role + ", " + app);
    CHECK_EXIT(bare, 78);
    INFO(bare.out);
    CHECK(bare.out.find("FAIL  privileges for clock run") != std::string::npos);
    CHECK(bare.out.find("try_acquire") != std::string::npos);
    CHECK(bare.out.find("clock_app") != std::string::npos);
    CHECK_EXIT(granted, 0);
  }
}
