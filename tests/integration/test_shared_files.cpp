// Several users on one host: a SQLite database shared by a group
// in a setgid folder, the errors that name the file in the way and the fix,
// and configuration fallbacks a user may not read. The users are numeric ids
// with no passwd entry (setpriv), so the tests need root; they skip otherwise.
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include <doctest/doctest.h>

#include "common_helpers.hpp"
#include "harness.hpp"

using namespace clk::test;

namespace {

constexpr int k_group = 61000;  // the group both users share
constexpr int k_alice = 61001;
constexpr int k_bob = 61002;

// `sh -c SCRIPT` as `uid` in k_group alone, under umask 002, with the test's
// environment (T_CLOCK, T_DIR…). The test directory is made traversable.
Result shell_as(const TestEnv& env, int uid, const std::string& script,
                const std::map<std::string, std::string>& extra_env = {}) {
  fs::permissions(env.dir(), fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec,
                  fs::perm_options::replace);
  Command command = env.command(
      {"setpriv", "--reuid=" + std::to_string(uid), "--regid=" + std::to_string(k_group),
       "--clear-groups", "--", "/bin/sh", "-c", "umask 002; " + script},
      extra_env);
  return run(command, env.path("output"));
}

gid_t group_of(const fs::path& file) {
  struct stat info {};
  REQUIRE(::stat(file.c_str(), &info) == 0);
  return info.st_gid;
}

// Root's config file, 0600 as clock demands when it holds a password, in
// the test's XDG_CONFIG_HOME; `folder_mode` is the mode of the clock/
// folder that holds it. k_alice may write her default database's folder,
// as a user may in her own home.
fs::path root_only_config(const TestEnv& env, unsigned folder_mode) {
  fs::create_directories(env.path("xdg-config/clock"));
  const fs::path config = env.path("xdg-config/clock/clock.toml");
  write_file(config, "database = \"postgresql://clock:secret@db.invalid/clock\"\n");
  REQUIRE(::chmod(config.c_str(), 0600) == 0);
  REQUIRE(::chmod(env.path("xdg-config").c_str(), 0755) == 0);
  REQUIRE(::chmod(env.path("xdg-config/clock").c_str(), folder_mode) == 0);
  for (const char* folder : {"own", "xdg-state"}) {
    fs::create_directories(env.path(folder));
    REQUIRE(::chown(env.path(folder).c_str(), k_alice, k_group) == 0);
  }
  return config;
}

// The file may name the shared database: going on with the local default
// would lock where no other host looks.
void unreadable_config_is_an_error(const TestEnv& env, const fs::path& config) {
  const std::string own_db = "sqlite:" + env.path("own/clock.db").string();
  const std::map<std::string, std::string> no_database = {{"CLOCK_DATABASE_URL", k_unset}};
  for (const char* command : {"run -r job -- true", "acquire -n -r job", "status"}) {
    CAPTURE(command);
    Result refused =
        shell_as(env, k_alice, std::string("exec \"$T_CLOCK\" ") + command, no_database);
    CHECK_EXIT(refused, 78);
    REQUIRE(refused.err_lines().size() == 1);
    const std::string line = refused.err_lines()[0];
    CHECK(contains(line, "cannot read the config file " + config.string() + ": "));
    CHECK(contains(line, "Permission denied"));
    CHECK(contains(line, "readable"));
    CHECK(contains(line, "--config"));
    CHECK(contains(line, "CLOCK_DATABASE_URL"));
    CHECK_FALSE(contains(line, "secret"));
  }
  CHECK_FALSE(fs::exists(env.path("xdg-state/clock")));

  // A database named on the command line or in the environment: the
  // warning, and the job runs.
  Result by_flag = shell_as(
      env, k_alice, "exec \"$T_CLOCK\" --database " + own_db + " run -r job -- true", no_database);
  Result by_env = shell_as(env, k_alice, "exec \"$T_CLOCK\" run -r job -- true",
                           {{"CLOCK_DATABASE_URL", own_db}});
  for (const Result* named : {&by_flag, &by_env}) {
    CHECK_EXIT(*named, 0);
    REQUIRE(named->err_lines().size() == 1);
    CHECK(contains(named->err_lines()[0], "skipping the config file " + config.string()));
    CHECK(contains(named->err_lines()[0], "Permission denied"));
  }
}

}  // namespace

TEST_SUITE("shared files") {
  TEST_CASE("two users of one group share a members-only database in a setgid folder" *
            sqlite_as_root()) {
    TestEnv env;
    const fs::path folder = env.path("shared");
    fs::create_directories(folder);
    REQUIRE(::chown(folder.c_str(), 0, k_group) == 0);
    REQUIRE(::chmod(folder.c_str(), 02770) == 0);
    const fs::path db = folder / "clock.db";
    const std::string run_job =
        "exec \"$T_CLOCK\" --database sqlite:" + db.string() + " run -r job -- true";

    for (int round = 0; round < 3; ++round) {
      CAPTURE(round);
      CHECK_EXIT(shell_as(env, k_alice, run_job), 0);
      CHECK_EXIT(shell_as(env, k_bob, run_job), 0);
    }
    // The database 0660 & ~umask, others never (a reader of the -shm could
    // stall the writers); SQLite gives the -wal and -shm the database's mode.
    for (const char* suffix : {"", "-wal", "-shm"}) {
      fs::path file = db.string() + suffix;
      CAPTURE(file);
      CHECK(mode_of(file) == 0660);
      CHECK(group_of(file) == k_group);
    }
  }

  TEST_CASE("a -wal or -shm another user left unwritable is named with the fix, exit 74" *
            sqlite_as_root()) {
    for (const char* suffix : {"-wal", "-shm"}) {
      CAPTURE(suffix);
      TestEnv env;
      const fs::path folder = env.path("open");
      fs::create_directories(folder);
      const fs::path db = folder / "clock.db";
      const std::string url = "sqlite:" + db.string();
      REQUIRE_EXIT(env.clock({"--database", url, "run", "-r", "job", "--", "true"}), 0);
      // What "chmod 666 clock.db; chmod 777 folder" leaves: the kept WAL
      // files still root's own.
      REQUIRE(::chmod(folder.c_str(), 0777) == 0);
      for (const char* each : {"", "-wal", "-shm"})
        REQUIRE(::chmod((db.string() + each).c_str(), 0666) == 0);
      const fs::path in_the_way = db.string() + suffix;
      REQUIRE(::chmod(in_the_way.c_str(), 0600) == 0);

      Result result =
          shell_as(env, k_alice, "exec \"$T_CLOCK\" --database " + url + " run -r job -- true");
      CHECK_EXIT(result, 74);
      REQUIRE(result.err_lines().size() == 1);
      const std::string line = result.err_lines()[0];
      CHECK(contains(line, in_the_way.string() + " is not readable and writable"));
      CHECK(contains(line, "chmod --reference=" + db.string() + " " + in_the_way.string()));
    }
  }

  TEST_CASE(
      "a state folder that cannot be created names XDG_STATE_HOME, CLOCK_DATABASE_URL "
      "and --database, exit 74" *
      only_on("sqlite")) {
    TestEnv env;
    // A file where a folder should be: fails for root too.
    write_file(env.path("not-a-folder"), "");
    Result result = env.clock(
        {"acquire", "-r", "x"},
        {{"CLOCK_DATABASE_URL", k_unset}, {"XDG_STATE_HOME", env.path("not-a-folder").string()}});
    CHECK_EXIT(result, 74);
    REQUIRE(result.err_lines().size() == 1);
    const std::string line = result.err_lines()[0];
    CHECK(contains(line, "cannot create the folder"));
    CHECK(contains(line, "XDG_STATE_HOME"));
    CHECK(contains(line, "CLOCK_DATABASE_URL"));
    CHECK(contains(line, "--database"));
  }

  TEST_CASE("a relative XDG_STATE_HOME is ignored, as the XDG spec says" * only_on("sqlite")) {
    TestEnv env;
    Result result =
        env.shell("cd \"$T_DIR\" && exec \"$T_CLOCK\" acquire -r x",
                  {{"CLOCK_DATABASE_URL", k_unset}, {"XDG_STATE_HOME", "relative-state"}});
    CHECK_EXIT(result, 0);
    CHECK_FALSE(fs::exists(env.path("relative-state")));
    CHECK(fs::exists(env.path("home/.local/state/clock/clock.db")));
  }

  TEST_CASE(
      "a fallback config file the user may not read is skipped with a warning when the "
      "database is named; a named config file exits 78" *
      as_root()) {
    TestEnv env;
    // Root's own file, 0600 as clock demands when it holds a password.
    fs::create_directories(env.path("xdg-config/clock"));
    const fs::path config = env.path("xdg-config/clock/clock.toml");
    write_file(config, "database = \"postgresql://clock:secret@db.invalid/clock\"\n");
    REQUIRE(::chmod(config.c_str(), 0600) == 0);
    REQUIRE(::chmod(env.path("xdg-config").c_str(), 0755) == 0);
    REQUIRE(::chmod(env.path("xdg-config/clock").c_str(), 0755) == 0);
    fs::create_directories(env.path("own"));
    REQUIRE(::chown(env.path("own").c_str(), k_alice, k_group) == 0);
    const std::string own_db = "sqlite:" + env.path("own/clock.db").string();

    Result skipped =
        shell_as(env, k_alice, "exec \"$T_CLOCK\" --database " + own_db + " run -r job -- true");
    CHECK_EXIT(skipped, 0);
    REQUIRE(skipped.err_lines().size() == 1);
    CHECK(contains(skipped.err_lines()[0], "skipping the config file " + config.string()));
    CHECK(contains(skipped.err_lines()[0], "Permission denied"));

    Result by_env = shell_as(env, k_alice, "exec \"$T_CLOCK\" run -r job -- true",
                             {{"CLOCK_DATABASE_URL", own_db}});
    CHECK_EXIT(by_env, 0);

    Result named = shell_as(env, k_alice,
                            "exec \"$T_CLOCK\" --database " + own_db + " --config " +
                                config.string() + " run -r job -- true");
    CHECK_EXIT(named, 78);
    REQUIRE(named.err_lines().size() == 1);
    CHECK(contains(named.err_lines()[0], "cannot read the config file " + config.string()));
    CHECK_FALSE(contains(named.err.empty() ? "" : named.err, "secret"));

    CHECK_EXIT(
        shell_as(env, k_alice, "exec \"$T_CLOCK\" --database " + own_db + " run -r job -- true",
                 {{"CLOCK_CONFIG", config.string()}}),
        78);
  }

  TEST_CASE(
      "an unreadable fallback config file exits 78 naming it and the fix, unless the "
      "database is named" *
      sqlite_as_root()) {
    TestEnv env;
    unreadable_config_is_an_error(env, root_only_config(env, 0755));
  }

  TEST_CASE(
      "a config folder that cannot be searched exits 78 naming the file, unless the "
      "database is named" *
      sqlite_as_root()) {
    TestEnv env;
    // Whether clock.toml is there cannot be told: it may be.
    unreadable_config_is_an_error(env, root_only_config(env, 0700));
  }

  TEST_CASE("a config folder without the file still falls through to the default" *
            sqlite_as_root()) {
    TestEnv env;
    fs::create_directories(env.path("xdg-config/clock"));
    REQUIRE(::chmod(env.path("xdg-config").c_str(), 0755) == 0);
    fs::create_directories(env.path("xdg-state"));
    REQUIRE(::chown(env.path("xdg-state").c_str(), k_alice, k_group) == 0);
    Result result = shell_as(env, k_alice, "exec \"$T_CLOCK\" run -r job -- true",
                             {{"CLOCK_DATABASE_URL", k_unset}});
    CHECK_EXIT(result, 0);
    CHECK(result.err.empty());
  }
}
