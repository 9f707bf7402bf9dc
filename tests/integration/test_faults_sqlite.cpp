// Faults of the SQLite file (man clock, EXIT STATUS exit 74, §5): a database file or folder
// that is read-only, a file that is not a database, a full disk (a small
// tmpfs, mounted in a private mount namespace), a folder on a FUSE mount
// (bindfs; SQLite's locks are not trusted there). Each is refused with one
// line naming the path and exit 74, before any child starts and without
// changing the file; a holder whose renewals fail so stops its child (79).
// They run with CLOCK_TEST_BACKEND=sqlite only.
#include <csignal>
#include <cstdlib>
#include <string>
#include <sys/stat.h>
#include <vector>

#include <doctest/doctest.h>

#include "fault_tools.hpp"
#include "harness.hpp"

using namespace clk::test;
using nlohmann::json;

namespace {

// `clock ARGS…` run without root's override of file permissions.
Command unprivileged_clock(const TestEnv& env, const std::vector<std::string>& args,
                           const std::string& url) {
  std::vector<std::string> argv = without_permission_override();
  argv.push_back(TestEnv::clock_binary());
  argv.insert(argv.end(), {"--database", url});
  argv.insert(argv.end(), args.begin(), args.end());
  return env.command(argv);
}

// The refusal every unusable file gets: exit 74, one line on stderr that
// names `path`, and the child never started.
void check_refused(const TestEnv& env, const Result& result, const std::string& path) {
  CHECK_EXIT(result, 74);
  auto lines = result.err_lines();
  INFO(result.describe());
  CHECK(lines.size() == 1);
  CHECK(result.err.find(path) != std::string::npos);
  CHECK_FALSE(fs::exists(env.path("ran")));
}

// A run whose child would leave a trace.
const std::vector<std::string> k_run_child = {
    "run", "-r", "job", "--", "sh", "-c", "touch \"$T_DIR/ran\""};

// A database holding one lease (on `held`), its connections all closed.
std::string held_owner_in(const TestEnv& env, const std::string& url) {
  Result acquired = env.clock({"--database", url, "acquire", "--format", "json", "-r", "held"});
  INFO(acquired.describe());
  REQUIRE(acquired.status == 0);
  return parse_acquired(acquired.out).owner;
}

// The holders of `url`, as "resource=owner" lines.
std::string holders_in(const TestEnv& env, const std::string& url) {
  Result status = env.clock({"--database", url, "status", "--format", "json"});
  INFO(status.describe());
  REQUIRE(status.status == 0);
  std::string out;
  const json parsed = json::parse(status.out);  // outlives the loop (a temporary would not)
  for (const auto& holder : parsed.at("holders")) {
    out += holder.at("resource").get<std::string>() + "=" + holder.at("owner").get<std::string>() +
           "\n";
  }
  return out;
}

}  // namespace

TEST_SUITE("faults-sqlite") {
  TEST_CASE("a read-only database file is refused with exit 74, naming it, and left unchanged" *
            ::clk::test::only_on("sqlite")) {
    TestEnv env;
    fs::create_directories(env.path("db"));
    const std::string file = env.path("db/clock.db").string();
    const std::string url = "sqlite:" + file;
    const std::string owner = held_owner_in(env, url);
    auto before = snapshot_files(file);
    fs::permissions(file, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read,
                    fs::perm_options::replace);

    check_refused(env, run(unprivileged_clock(env, k_run_child, url), env.path("output")), file);
    check_refused(
        env, run(unprivileged_clock(env, {"acquire", "-r", "job"}, url), env.path("output")), file);
    CHECK(snapshot_files(file) == before);

    fs::permissions(file, fs::perms::owner_write, fs::perm_options::add);
    CHECK(holders_in(env, url) == "held=" + owner + "\n");
  }

  TEST_CASE("a new database in a read-only folder is refused with exit 74, naming it" *
            ::clk::test::only_on("sqlite")) {
    TestEnv env;
    fs::create_directories(env.path("ro"));
    const std::string file = env.path("ro/clock.db").string();
    fs::permissions(env.path("ro"), fs::perms::owner_read | fs::perms::owner_exec,
                    fs::perm_options::replace);
    Result result = run(unprivileged_clock(env, k_run_child, "sqlite:" + file), env.path("output"));
    fs::permissions(env.path("ro"), fs::perms::owner_all, fs::perm_options::replace);
    check_refused(env, result, file);
    CHECK(fs::is_empty(env.path("ro")));
  }

  TEST_CASE(
      "an existing database in a folder made read-only keeps working where SQLite needs no new "
      "file, or is refused with exit 74" *
      ::clk::test::only_on("sqlite")) {
    TestEnv env;
    fs::create_directories(env.path("ro"));
    const std::string file = env.path("ro/clock.db").string();
    const std::string url = "sqlite:" + file;
    const std::string owner = held_owner_in(env, url);
    fs::permissions(env.path("ro"), fs::perms::owner_read | fs::perms::owner_exec,
                    fs::perm_options::replace);
    Result result = run(unprivileged_clock(env, k_run_child, url), env.path("output"));
    fs::permissions(env.path("ro"), fs::perms::owner_all, fs::perm_options::replace);
    // The WAL and its index exist already (clock keeps them), so the
    // writable file in a read-only folder may be used; if SQLite wants a new
    // file there, the answer must be a clean 74 with the child not started.
    MESSAGE("clock run with the database folder read-only exited " << result.status);
    if (result.status == 0) {
      CHECK(fs::exists(env.path("ran")));
    } else {
      check_refused(env, result, file);
    }
    CHECK(holders_in(env, url) == "held=" + owner + "\n");
  }

  TEST_CASE("a file that is not a database is refused with exit 74, naming it, and left as it was" *
            ::clk::test::only_on("sqlite")) {
    TestEnv env;
    const std::string file = env.path("notes.db").string();
    std::string text;
    for (int i = 0; i < 200; ++i)
      text += "these are somebody's notes, not a clock database\n";
    write_file(file, text);
    const std::string url = "sqlite:" + file;

    check_refused(env,
                  env.clock({"--database", url, "run", "-r", "job", "--", "sh", "-c",
                             "touch \"$T_DIR/ran\""}),
                  file);
    check_refused(env, env.clock({"--database", url, "acquire", "-r", "job"}), file);
    check_refused(env, env.clock({"--database", url, "status"}), file);
    CHECK(read_file(file) == text);
    CHECK_FALSE(fs::exists(file + "-wal"));
  }

  TEST_CASE(
      "a file size limit (ulimit -f) is refused with exit 74 naming the file, not death by "
      "SIGXFSZ, and the command clock runs keeps the limit's signal" *
      ::clk::test::only_on("sqlite")) {
    TestEnv env;
    const std::string file = env.path("clock.db").string();
    const std::string url = "sqlite:" + file;
    const std::string owner = held_owner_in(env, url);
    auto before = snapshot_files(file);
    // Below the size of the WAL that clock keeps: its next append is past it.
    const auto limit = std::to_string(4096);
    Result limited =
        run(env.command({"prlimit", "--fsize=" + limit, TestEnv::clock_binary(), "--database", url,
                         "run", "-r", "job", "--", "sh", "-c", "touch \"$T_DIR/ran\""}),
            env.path("output"));
    check_refused(env, limited, file);
    CHECK(limited.err.find("File too large") != std::string::npos);
    CHECK(snapshot_files(file) == before);
    CHECK(holders_in(env, url) == "held=" + owner + "\n");

    // The command gets the default action back: past a limit that leaves
    // clock's own files room (4 MiB), it dies of SIGXFSZ as it would alone.
    Result child =
        run(env.command({"prlimit", "--fsize=4194304", TestEnv::clock_binary(), "--database",
                         "sqlite:" + env.path("roomy.db").string(), "run", "-r", "job", "--", "sh",
                         "-c", "head -c 5000000 /dev/zero > \"$T_DIR/big\""}),
            env.path("output"));
    CHECK_EXIT(child, 128 + SIGXFSZ);
  }

  TEST_CASE(
      "a full disk refuses a new lock with exit 74 and changes nothing; a holder whose renewals "
      "fail on it stops its child and exits 79" *
      doctest::timeout(180) * ::clk::test::only_on("sqlite")) {
    TestEnv env;
    auto prefix = private_mounts(env);
    if (prefix.empty()) {
      MESSAGE("skipped: cannot make a private mount namespace (unshare) for a small tmpfs");
      return;
    }
    fs::create_directories(env.path("small"));
    // All in one private mount namespace: the 1 MiB tmpfs vanishes with it.
    // A holder starts, the disk fills up, a newcomer is refused; the holder
    // cannot renew and stops its child; then space is freed and the state
    // is read back.
    std::string script = R"sh(
set -u
mount -t tmpfs -o size=1m tmpfs "$T_DIR/small" || exit 90
export CLOCK_DATABASE_URL="sqlite:$T_DIR/small/clock.db"
"$T_CLOCK" acquire --format json -r held > "$T_DIR/held.json" || exit 91
"$T_CLOCK" run --ttl 4s --heartbeat 500ms --kill-after 1s -r job -- sh -c '
  trap "echo stopped > \"$T_DIR/term\"; exit 0" TERM
  touch "$T_DIR/holder.started"
  while :; do sleep 0.05; done' 2> "$T_DIR/holder.err" &
holder=$!
i=0
while [ ! -e "$T_DIR/holder.started" ] && [ "$i" -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
[ -e "$T_DIR/holder.started" ] || exit 92
dd if=/dev/zero of="$T_DIR/small/filler" bs=4k 2> /dev/null
sync
"$T_CLOCK" run -r other -- sh -c 'touch "$T_DIR/ran"' 2> "$T_DIR/refused.err"
echo $? > "$T_DIR/refused.status"
wait "$holder"
echo $? > "$T_DIR/holder.status"
rm -f "$T_DIR/small/filler"
"$T_CLOCK" status --all --format json > "$T_DIR/status.json" || exit 93
"$T_CLOCK" history --format json > "$T_DIR/history.json" || exit 94
)sh";
    std::vector<std::string> argv = prefix;
    argv.insert(argv.end(), {"/bin/sh", "-c", script});
    Result result = run(env.command(argv, {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}}),
                        env.path("output"), 150s);
    REQUIRE_EXIT(result, 0);
    const std::string file = env.path("small/clock.db").string();

    // The newcomer: 74, one line naming the file, no child.
    std::string refused = read_file(env.path("refused.err"));
    INFO("refused: " << refused);
    MESSAGE("disk full, a new lock: " << refused);
    CHECK(read_file(env.path("refused.status")) == "74\n");
    CHECK(refused.find(file) != std::string::npos);
    CHECK(std::count(refused.begin(), refused.end(), '\n') == 1);
    CHECK_FALSE(fs::exists(env.path("ran")));

    // The holder: renewals failed, child stopped, 79.
    INFO("holder: " << read_file(env.path("holder.err")));
    MESSAGE("disk full, the holder: " << read_file(env.path("holder.err")));
    CHECK(read_file(env.path("holder.status")) == "79\n");
    CHECK(read_file(env.path("term")) == "stopped\n");

    // Nothing of the newcomer in the table or the history.
    const std::string held_owner = parse_acquired(read_file(env.path("held.json"))).owner;
    json status = json::parse(read_file(env.path("status.json")));
    bool held_found = false;
    for (const auto& holder : status.at("holders")) {
      CHECK(holder.at("resource") != "other");
      held_found = held_found || holder.at("owner") == held_owner;
    }
    CHECK(held_found);
    const json history = json::parse(read_file(env.path("history.json")));
    for (const auto& event : history.at("events"))
      CHECK(event.at("resource") != "other");
  }

  TEST_CASE(
      "a database folder on a FUSE mount is refused with exit 74 naming the folder, unless "
      "sqlite.allow_network_filesystem is set" *
      doctest::timeout(120) * ::clk::test::only_on("sqlite")) {
    TestEnv env;
    auto prefix = private_mounts(env);
    if (prefix.empty() || std::system("command -v bindfs >/dev/null 2>&1") != 0 ||
        !fs::exists("/dev/fuse")) {
      MESSAGE("skipped: needs unshare, bindfs (packaging/install-deps.sh) and /dev/fuse");
      return;
    }
    fs::create_directories(env.path("local"));
    fs::create_directories(env.path("fuse"));
    write_file(env.path("allow.toml"), "[sqlite]\nallow_network_filesystem = true\n");
    // bindfs in the foreground, in the background of the script: it dies
    // with the script's process group, and the mount with the namespace.
    std::string script = R"sh(
set -u
bindfs -f "$T_DIR/local" "$T_DIR/fuse" &
i=0
while [ "$(stat -f -c %t "$T_DIR/fuse")" != 65735546 ] && [ "$i" -lt 200 ]; do
  sleep 0.05; i=$((i + 1))
done
[ "$(stat -f -c %t "$T_DIR/fuse")" = 65735546 ] || exit 90
export CLOCK_DATABASE_URL="sqlite:$T_DIR/fuse/clock.db"
"$T_CLOCK" run -r job -- sh -c 'touch "$T_DIR/ran"' 2> "$T_DIR/refused.err"
echo $? > "$T_DIR/refused.status"
ls -A "$T_DIR/local" > "$T_DIR/refused.files"
CLOCK_CONFIG="$T_DIR/allow.toml" "$T_CLOCK" run -r job -- sh -c 'touch "$T_DIR/allowed"' \
  2> "$T_DIR/allowed.err"
echo $? > "$T_DIR/allowed.status"
umount "$T_DIR/fuse" || fusermount -u "$T_DIR/fuse"
wait
)sh";
    std::vector<std::string> argv = prefix;
    argv.insert(argv.end(), {"/bin/sh", "-c", script});
    Result result = run(env.command(argv, {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}}),
                        env.path("output"), 100s);
    if (result.status == 90) {
      MESSAGE("skipped: bindfs could not mount here: " << result.err);
      return;
    }
    REQUIRE_EXIT(result, 0);

    std::string refused = read_file(env.path("refused.err"));
    INFO("refused: " << refused);
    MESSAGE("on FUSE: " << refused);
    CHECK(read_file(env.path("refused.status")) == "74\n");
    CHECK(refused.find(env.path("fuse").string()) != std::string::npos);
    CHECK(refused.find("FUSE") != std::string::npos);
    CHECK(std::count(refused.begin(), refused.end(), '\n') == 1);
    CHECK_FALSE(fs::exists(env.path("ran")));
    CHECK(read_file(env.path("refused.files")).empty());  // no database file was created

    INFO("allowed: " << read_file(env.path("allowed.err")));
    CHECK(read_file(env.path("allowed.status")) == "0\n");
    CHECK(fs::exists(env.path("allowed")));
    CHECK(fs::exists(env.path("local/clock.db")));
  }
}
