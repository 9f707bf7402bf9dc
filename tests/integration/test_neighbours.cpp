// No neighbour can stall the lock table: a local user who can
// only read a SQLite database, a file another user planted where the caller
// looks, odd but accepted input (a month-long TTL, thousands of resources, a
// namespace holding ESC) and a database URL libpq refuses. The users are
// numeric ids with no passwd entry (setpriv), so those cases need root.
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include <doctest/doctest.h>

#include "common_helpers.hpp"
#include "harness.hpp"

using namespace clk::test;

namespace {

constexpr int k_neighbour_alice = 62001;
constexpr int k_carol = 62002;  // a neighbour with no group in common

// `sh -c SCRIPT` as `uid` (its own group alone) under `umask`, with the
// test's environment. The test directory is made traversable.
Command neighbour_shell_as(const TestEnv& env, int uid, const std::string& script,
                           const std::map<std::string, std::string>& extra_env = {},
                           const std::string& umask = "022") {
  fs::permissions(env.dir(), fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec,
                  fs::perm_options::replace);
  return env.command({"setpriv", "--reuid=" + std::to_string(uid), "--regid=" + std::to_string(uid),
                      "--clear-groups", "--", "/bin/sh", "-c", "umask " + umask + "; " + script},
                     extra_env);
}

// Python that opens FILE read-only, takes a shared fcntl lock on byte
// OFFSET (SQLite's WAL write lock is byte 120 of the -shm), writes "locked"
// or the error to REPORT, then keeps the lock until GO exists (a minute at most).
const std::string k_shm_locker = R"(
import fcntl, os, sys, time
file, offset, report, go = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
try:
    fd = os.open(file, os.O_RDONLY)
    fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, offset, os.SEEK_SET)
    outcome = "locked"
except OSError as error:
    outcome = "refused: " + error.strerror
with open(report + ".tmp", "w") as out:
    out.write(outcome)
os.rename(report + ".tmp", report)
deadline = time.time() + 60
while outcome == "locked" and not os.path.exists(go) and time.time() < deadline:
    time.sleep(0.02)
)";

}  // namespace

TEST_SUITE("neighbours") {
  TEST_CASE("the default database folder is 0700 and its files 0600 under umask 022" *
            only_on("sqlite")) {
    TestEnv env;
    const fs::path state = env.path("fresh/state");  // its parent is made too
    Result result =
        env.shell("umask 022; exec \"$T_CLOCK\" run -r job -- true",
                  {{"CLOCK_DATABASE_URL", k_unset}, {"XDG_STATE_HOME", state.string()}});
    REQUIRE_EXIT(result, 0);
    const fs::path folder = state / "clock";
    CHECK(mode_of(folder) == 0700);
    CHECK(mode_of(state) == 0700);
    CHECK(mode_of(env.path("fresh")) == 0700);
    for (const char* suffix : {"clock.db", "clock.db-wal", "clock.db-shm"}) {
      CAPTURE(suffix);
      CHECK(mode_of(folder / suffix) == 0600);
    }
  }

  TEST_CASE("a default database made readable before is narrowed to 0700 and 0600" *
            only_on("sqlite")) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"run", "-r", "job", "--", "true"}, {{"CLOCK_DATABASE_URL", k_unset}}),
                 0);
    const fs::path folder = env.path("xdg-state/clock");
    REQUIRE(::chmod(folder.c_str(), 0755) == 0);
    for (const char* name : {"clock.db", "clock.db-wal", "clock.db-shm"})
      REQUIRE(::chmod((folder / name).c_str(), 0644) == 0);
    REQUIRE_EXIT(env.clock({"run", "-r", "job", "--", "true"}, {{"CLOCK_DATABASE_URL", k_unset}}),
                 0);
    CHECK(mode_of(folder) == 0700);
    for (const char* name : {"clock.db", "clock.db-wal", "clock.db-shm"}) {
      CAPTURE(name);
      CHECK(mode_of(folder / name) == 0600);
    }
  }

  TEST_CASE("a neighbour who locks a byte of the default -shm cannot stall another user's run" *
            sqlite_as_root()) {
    TestEnv env;
    const fs::path home = env.path("alice-home");
    fs::create_directories(home);
    REQUIRE(::chown(home.c_str(), k_neighbour_alice, k_neighbour_alice) == 0);
    const std::map<std::string, std::string> alice_env = {
        {"CLOCK_DATABASE_URL", k_unset}, {"HOME", home.string()}, {"XDG_STATE_HOME", k_unset}};
    const std::string run_job = "exec \"$T_CLOCK\" run -r job -- true";
    REQUIRE_EXIT(
        run(neighbour_shell_as(env, k_neighbour_alice, run_job, alice_env), env.path("output")), 0);
    const fs::path shm = home / ".local/state/clock/clock.db-shm";
    REQUIRE(fs::exists(shm));

    write_file(env.path("locker.py"), k_shm_locker);
    fs::create_directories(env.path("carol"));
    REQUIRE(::chown(env.path("carol").c_str(), k_carol, k_carol) == 0);
    const fs::path report = env.path("carol/locker.report");
    auto locker =
        env.spawn(neighbour_shell_as(env, k_carol,
                                     "exec /usr/bin/python3 \"$T_DIR/locker.py\" " + shm.string() +
                                         " 120 " + report.string() + " \"$T_DIR/locker.go\""));
    REQUIRE(await([&] { return fs::exists(report); }, 30s));
    INFO("the neighbour: " << read_file(report));

    Result result =
        run(neighbour_shell_as(env, k_neighbour_alice, run_job, alice_env), env.path("output"));
    env.let_go("locker");
    CHECK_EXIT(result, 0);
    CHECK(result.seconds < 5);
    CHECK(contains(read_file(report), "refused"));
  }

  TEST_CASE("a lock another process keeps on the -shm exits 74 naming the file, not 70" *
            only_on("sqlite")) {
    TestEnv env;
    const fs::path db = env.path("named/clock.db");
    fs::create_directories(db.parent_path());
    const std::string url = "sqlite:" + db.string();
    REQUIRE_EXIT(env.clock({"--database", url, "run", "-r", "job", "--", "true"}), 0);
    const fs::path shm = db.string() + "-shm";

    write_file(env.path("locker.py"), k_shm_locker);
    const fs::path report = env.path("locker.report");
    auto locker =
        env.spawn(env.command({"/usr/bin/python3", env.path("locker.py").string(), shm.string(),
                               "120", report.string(), env.path("locker.go").string()}));
    REQUIRE(await([&] { return fs::exists(report); }, 30s));
    REQUIRE(read_file(report) == "locked");

    Result result = env.clock({"--database", url, "run", "-r", "job", "--", "true"});
    env.let_go("locker");
    CHECK_EXIT(result, 74);
    REQUIRE(result.err_lines().size() == 1);
    const std::string line = result.err_lines()[0];
    CHECK(contains(line, shm.string()));
    CHECK(contains(line, "process " + std::to_string(locker->pid())));
    CHECK(contains(line, "fuser -v " + shm.string()));
  }

  TEST_CASE("a database another user planted in a world-writable folder is refused, 74" *
            sqlite_as_root()) {
    TestEnv env;
    const fs::path shared_tmp = env.path("shared-tmp");
    fs::create_directories(shared_tmp);
    REQUIRE(::chmod(shared_tmp.c_str(), 01777) == 0);
    const fs::path db = shared_tmp / "clock.db";
    const std::string run_job =
        "exec \"$T_CLOCK\" --database sqlite:" + db.string() + " run -r job -- true";
    // carol pre-creates the name, mode 0666, as a neighbour in /tmp would.
    REQUIRE_EXIT(run(neighbour_shell_as(env, k_carol, "touch " + db.string(), {}, "000"),
                     env.path("output")),
                 0);
    REQUIRE(mode_of(db) == 0666);

    Result planted = run(neighbour_shell_as(env, k_neighbour_alice, run_job), env.path("output"));
    CHECK_EXIT(planted, 74);
    REQUIRE(planted.err_lines().size() == 1);
    const std::string line = planted.err_lines()[0];
    CHECK(contains(line, db.string()));
    CHECK(contains(line, "uid " + std::to_string(k_carol)));
    CHECK(contains(line, "world-writable"));
    CHECK(fs::file_size(db) == 0);  // left as it was

    // A -shm planted beside alice's name is refused the same way.
    const fs::path own = shared_tmp / "own.db";
    REQUIRE_EXIT(run(neighbour_shell_as(env, k_carol, "touch " + own.string() + "-shm", {}, "000"),
                     env.path("output")),
                 0);
    Result planted_shm =
        run(neighbour_shell_as(
                env, k_neighbour_alice,
                "exec \"$T_CLOCK\" --database sqlite:" + own.string() + " run -r job -- true"),
            env.path("output"));
    CHECK_EXIT(planted_shm, 74);
    CHECK(contains(planted_shm.err, own.string() + "-shm belongs to"));

    // alice's own database there, and root's, are hers to use.
    fs::remove(own.string() + "-shm");
    const std::string own_job =
        "exec \"$T_CLOCK\" --database sqlite:" + own.string() + " run -r job -- true";
    CHECK_EXIT(run(neighbour_shell_as(env, k_neighbour_alice, own_job), env.path("output")), 0);
    CHECK((mode_of(own) & 007) == 0);  // others get nothing, whatever the umask
  }

  TEST_CASE("a default database folder another user owns is refused, 74" * sqlite_as_root()) {
    TestEnv env;
    const fs::path home = env.path("alice-home");
    fs::create_directories(home / ".local/state/clock");
    REQUIRE(::chown(home.c_str(), k_neighbour_alice, k_neighbour_alice) == 0);
    REQUIRE(::chown((home / ".local").c_str(), k_neighbour_alice, k_neighbour_alice) == 0);
    REQUIRE(::chown((home / ".local/state").c_str(), k_neighbour_alice, k_neighbour_alice) == 0);
    REQUIRE(::chown((home / ".local/state/clock").c_str(), k_carol, k_carol) == 0);
    REQUIRE(::chmod((home / ".local/state/clock").c_str(), 0777) == 0);
    Result result =
        run(neighbour_shell_as(env, k_neighbour_alice, "exec \"$T_CLOCK\" run -r job -- true",
                               {{"CLOCK_DATABASE_URL", k_unset},
                                {"HOME", home.string()},
                                {"XDG_STATE_HOME", k_unset}}),
            env.path("output"));
    CHECK_EXIT(result, 74);
    REQUIRE(result.err_lines().size() == 1);
    CHECK(contains(result.err_lines()[0], (home / ".local/state/clock").string() + " belongs to"));
    CHECK(contains(result.err_lines()[0], "--database"));
    CHECK_FALSE(fs::exists(home / ".local/state/clock/clock.db"));
  }

  TEST_CASE("a config file others may write, or another user owns, is refused unless named, 78" *
            as_root()) {
    TestEnv env;
    fs::create_directories(env.path("xdg-config/clock"));
    const fs::path config = env.path("xdg-config/clock/clock.toml");
    write_file(config, "namespace = \"from-config\"\n");

    for (unsigned mode : {0664u, 0646u}) {
      CAPTURE(mode);
      REQUIRE(::chmod(config.c_str(), mode) == 0);
      Result result = env.clock({"acquire", "-r", "x"});
      CHECK_EXIT(result, 78);
      REQUIRE(result.err_lines().size() == 1);
      CHECK(contains(result.err_lines()[0], config.string()));
      CHECK(contains(result.err_lines()[0], "chmod go-w"));
    }
    REQUIRE(::chmod(config.c_str(), 0644) == 0);
    REQUIRE(::chown(config.c_str(), k_carol, k_carol) == 0);
    Result foreign = env.clock({"acquire", "-r", "x"});
    CHECK_EXIT(foreign, 78);
    REQUIRE(foreign.err_lines().size() == 1);
    CHECK(contains(foreign.err_lines()[0], "uid " + std::to_string(k_carol)));

    // Named, it is the caller's choice.
    CHECK_EXIT(env.clock({"--config", config.string(), "acquire", "-r", "x"}), 0);
    REQUIRE(::chown(config.c_str(), 0, 0) == 0);
    CHECK_EXIT(env.clock({"acquire", "-r", "y"}), 0);
    CHECK(env.holders_of("y").at(0)["namespace"] == "from-config");
  }

  TEST_CASE("a TTL past the 30d cap exits 64 naming it; past a day warns; status keeps working") {
    TestEnv env;
    for (const char* command : {"acquire", "run"}) {
      CAPTURE(command);
      std::vector<std::string> args = {command, "-r", "x", "--ttl", "2920000d"};
      if (std::string(command) == "run")
        args.insert(args.end(), {"--", "true"});
      Result result = env.clock(args);
      CHECK_EXIT(result, 64);
      REQUIRE(result.err_lines().size() == 1);
      CHECK(contains(result.err_lines()[0], "30d"));
    }
    Result long_ttl = env.clock({"acquire", "-r", "long", "--ttl", "30d"});
    CHECK_EXIT(long_ttl, 0);
    REQUIRE(long_ttl.err_lines().size() == 1);
    CHECK(contains(long_ttl.err_lines()[0], "warning"));
    CHECK(contains(long_ttl.err_lines()[0], "--ttl 30d"));

    for (const char* format : {"table", "json", "prometheus"}) {
      CAPTURE(format);
      CHECK_EXIT(env.clock({"status", "--format", format}), 0);
    }
    CHECK_EXIT(env.clock({"renew", "-r", "long", "--ttl", "31d"}), 64);

    fs::create_directories(env.path("xdg-config/clock"));
    write_file(env.path("xdg-config/clock/clock.toml"), "[lock]\nttl = \"400d\"\n");
    Result from_file = env.clock({"acquire", "-r", "y"});
    CHECK_EXIT(from_file, 78);
    CHECK(contains(from_file.err, "lock.ttl"));
  }

  TEST_CASE("more than 64 resources in one call exit 64; 64 are taken") {
    TestEnv env;
    std::vector<std::string> many;
    for (int i = 0; i < 2000; ++i)
      many.insert(many.end(), {"-r", "r" + std::to_string(i)});
    for (const char* command : {"acquire", "renew", "release"}) {
      CAPTURE(command);
      std::vector<std::string> args = {command};
      args.insert(args.end(), many.begin(), many.end());
      Result result = env.clock(args, {{"CLOCK_OWNER", random_owner()}});
      CHECK_EXIT(result, 64);
      REQUIRE(result.err_lines().size() == 1);
      CHECK(contains(result.err_lines()[0], "2000 resources"));
      CHECK(contains(result.err_lines()[0], "at most 64"));
    }
    std::vector<std::string> args = {"acquire"};
    args.insert(args.end(), many.begin(), many.begin() + 128);
    CHECK_EXIT(env.clock(args), 0);
    CHECK(env.holders_of("r63").size() == 1);
  }

  TEST_CASE("a stored namespace holding ESC or a newline prints escaped in status and history" *
            only_on("sqlite")) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"--namespace", "evil", "acquire", "-r", "x"}), 0);
    // Only a direct write can store it: --namespace refuses it.
    REQUIRE_EXIT(env.shell("sqlite3 \"${CLOCK_DATABASE_URL#sqlite:}\" "
                           "\"UPDATE leases SET namespace = 'ev' || char(27) || '[2J' || "
                           "char(10) || 'il'; UPDATE history SET namespace = 'ev' || char(27) || "
                           "'[2J' || char(10) || 'il'\""),
                 0);
    for (const char* command : {"status", "history"}) {
      CAPTURE(command);
      Result result = env.clock({command});
      CHECK_FALSE(contains(result.out, "\x1b"));
      CHECK_FALSE(contains(result.out, "ev\x1b"));
      CHECK(contains(result.out, "ev\\x1b[2J\\x0ail:x"));
    }
  }

  TEST_CASE("a database URL libpq refuses exits 78 at once with libpq's reason") {
    TestEnv env;
    write_file(env.path("pg_service.conf"), "[other]\nhost=127.0.0.1\n");
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"postgresql://127.0.0.1:1/clock?sslmode=bogus", "invalid sslmode value: \"bogus\""},
        {"postgresql://127.0.0.1:1/clock?service=nosuch", "service \"nosuch\" not found"},
        {"host=127.0.0.1 port=1 dbname=clock target_session_attrs=x password=hunter2",
         "invalid target_session_attrs value"}};
    for (const auto& [url, reason] : cases) {
      CAPTURE(url);
      Result result = env.clock({"--database", url, "acquire", "-n", "-r", "x"},
                                {{"PGSERVICEFILE", env.path("pg_service.conf").string()}});
      CHECK_EXIT(result, 78);
      CHECK(result.seconds < 1);
      REQUIRE(result.err_lines().size() == 1);
      CHECK(contains(result.err_lines()[0], reason));
      CHECK_FALSE(contains(result.err, "hunter2"));
    }
  }
}
