// The owner's secret (man clock, Owners and re-entry, §5): the owner id is public, renewing,
// releasing and re-entering need the secret, which only CLOCK_OWNER (from
// `acquire --format shell` or `clock run`) carries; a refused attempt is
// recorded in history with who asked, and so is any release from outside the
// holder's process tree. The secret never sits where others can read it:
// not in clock's /proc/PID/cmdline (nor its guard's), not in a stored
// command line.
#include <csignal>
#include <fstream>
#include <iterator>
#include <sstream>
#include <unistd.h>

#include <doctest/doctest.h>

#include "common_helpers.hpp"
#include "harness.hpp"
#include "owner_secret_scenario.hpp"

using namespace clk::test;
using nlohmann::json;

namespace {

// The live children of `parent` (its guard, its command), from /proc/*/stat.
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> children;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line))
      continue;
    auto close = line.rfind(')');
    if (close == std::string::npos)
      continue;
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent)
      children.push_back(static_cast<pid_t>(std::stol(line)));
  }
  return children;
}

// The command lines of `pid` and its children hold `id` (the public part
// where it was given) but never `secret`.
void check_no_secret_in_cmdlines(pid_t pid, const std::string& id, const std::string& secret) {
  const std::string own = proc_cmdline(pid);
  CHECK(contains(own, "--owner"));
  CHECK(contains(own, id));
  CHECK_FALSE(contains(own, secret));
  auto children = children_of(pid);
  CHECK(!children.empty());  // the guard at least
  for (pid_t child : children) {
    CAPTURE(child);
    CAPTURE(proc_cmdline(child));
    CHECK_FALSE(contains(proc_cmdline(child), secret));
  }
}

// `clock run --owner CREDENTIAL` (or --owner=CREDENTIAL) with `binary`,
// holding x until stopped: neither its command line nor its children's
// show the secret while the command runs.
void run_shows_no_secret(const TestEnv& env, const std::string& binary) {
  for (bool inline_value : {false, true}) {
    CAPTURE(inline_value);
    const std::string credential = random_owner();
    const std::string secret = secret_of(credential);
    std::vector<std::string> owner = {"--owner", credential};
    if (inline_value)
      owner = {"--owner=" + credential};
    std::vector<std::string> argv = {binary, "run"};
    argv.insert(argv.end(), owner.begin(), owner.end());
    for (const char* arg : {"-r", "x", "--", "sleep", "30"})
      argv.push_back(arg);
    auto holder = env.spawn(env.command(argv));
    REQUIRE(await([&] { return !env.holders_of("x").empty(); }, 30s, 20ms));
    check_no_secret_in_cmdlines(holder->pid(), id_of(credential), secret);
    holder->signal(SIGTERM);
    holder->wait();
  }
}

json secret_events(const TestEnv& env, const std::vector<std::string>& args) {
  std::vector<std::string> full = {"history", "--format", "json"};
  full.insert(full.end(), args.begin(), args.end());
  Result history = env.clock(full);
  INFO(history.describe());
  REQUIRE(history.status == 0);
  return json::parse(history.out)["events"];
}

}  // namespace

TEST_SUITE("owner secret") {
  TEST_CASE("the owner id alone, or a wrong secret, cannot renew, release or re-enter: 77") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "x"});
    REQUIRE(secret_of(holder.credential).size() == 32);
    const std::string wrong = holder.owner + ".ffffffffffffffffffffffffffffffff";
    const std::string expected = "owner " + holder.owner +
                                 " holds or waits for a lock, but this caller did not prove it is "
                                 "that owner";
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"release", "-r", "x", "--owner", holder.owner},
             {"renew", "-r", "x", "--owner", holder.owner},
             {"release", "-r", "x", "--owner", wrong},
             {"renew", "-r", "x", "--owner", wrong},
             {"acquire", "-n", "-r", "x", "--owner", wrong},
         }) {
      Result refused = env.clock(args);
      INFO(refused.describe());
      CHECK(refused.status == 77);
      REQUIRE(refused.err_lines().size() == 1);
      CHECK(contains(refused.err, expected));
    }
    CHECK_EXIT(env.clock({"release", "-r", "x"}, {{"CLOCK_OWNER", holder.owner}}), 77);

    // Nothing changed but history: the lease is held, unextended, same token.
    auto holders = env.holders_of("x");
    REQUIRE(holders.size() == 1);
    CHECK(holders[0]["token"] == holder.token());
    auto refused = secret_events(env, {"--event", "refused"});
    INFO(refused.dump(2));
    CHECK(refused.size() == 6);
    for (const auto& event : refused) {
      CHECK(event["owner"] == holder.owner);
      CHECK(event["token"] == holder.token());
      CHECK(contains(event["by"].get<std::string>(), "@" + host_name() + " pid "));
    }

    // The secret proves it: re-entry, renewal and release work.
    CHECK(env.acquire({"-n", "-r", "x", "--owner", holder.credential}).token() == holder.token());
    CHECK_EXIT(env.clock({"renew", "-r", "x", "--owner", holder.credential}), 0);
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", holder.credential}), 0);
    CHECK_EXIT(env.clock({"release", "-r", "x"}, {{"CLOCK_OWNER", holder.credential}}), 0);
    CHECK(env.holders_of("x").empty());
  }

  TEST_CASE("an owner id without its secret cannot acquire, and a malformed secret is a 64") {
    TestEnv env;
    Result bare = env.clock({"acquire", "-n", "-r", "x", "--owner", random_uuid()});
    CHECK_EXIT(bare, 64);
    CHECK(contains(bare.err, "without its secret"));
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x", "--owner", random_uuid() + ".xyz"}), 64);
    CHECK_EXIT(env.clock({"run", "-n", "-r", "x", "--", "true"}, {{"CLOCK_OWNER", random_uuid()}}),
               64);
    CHECK(env.holders_of("x").empty());
  }

  TEST_CASE("only acquire --format shell and clock run's child see the secret") {
    TestEnv env;
    Result shell = env.clock({"acquire", "--format", "shell", "-r", "x"});
    REQUIRE_EXIT(shell, 0);
    Acquired holder = parse_acquired_shell(shell.out);
    const std::string secret = secret_of(holder.credential);
    Result text = env.clock({"acquire", "-n", "-r", "x", "--owner", holder.credential});
    Result as_json =
        env.clock({"acquire", "-n", "-r", "x", "--owner", holder.credential, "--format", "json"});
    REQUIRE_EXIT(text, 0);
    REQUIRE_EXIT(as_json, 0);
    CHECK(json::parse(as_json.out)["owner"] == holder.owner);
    Result verbose = env.clock(
        {"-v", "run", "-r", "y", "--", "sh", "-c", "echo \"$CLOCK_OWNER\" > \"$T_DIR/child\""});
    REQUIRE_EXIT(verbose, 0);
    const std::string child = read_file(env.path("child"));
    const std::string child_secret = child.substr(37, 32);
    for (const Result& shown :
         {text, as_json, verbose, env.clock({"status", "--format", "json"}),
          env.clock({"history", "--format", "json"}), env.clock({"status"}), env.clock({"history"}),
          env.clock({"status", "--format", "prometheus"})}) {
      CHECK_FALSE(contains(shown.out + shown.err, secret));
      CHECK_FALSE(contains(shown.out + shown.err, child_secret));
    }
  }

  TEST_CASE("a release from outside the holder's process tree is recorded with who asked") {
    TestEnv env;
    // Held by the shell that ran acquire: the test process is not in its tree.
    Result outside = env.shell("\"$T_CLOCK\" acquire --format shell -r x");
    REQUIRE_EXIT(outside, 0);
    Acquired held = parse_acquired_shell(outside.out);
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", held.credential}), 0);
    // Acquired and released by one script: its own tree, nobody else named.
    REQUIRE_EXIT(env.shell("eval \"$(\"$T_CLOCK\" acquire --format shell -r y)\" && "
                           "exec \"$T_CLOCK\" release -r y"),
                 0);
    auto x = secret_events(env, {"x", "--event", "released"});
    auto y = secret_events(env, {"y", "--event", "released"});
    REQUIRE(x.size() == 1);
    REQUIRE(y.size() == 1);
    CHECK(contains(x[0]["by"].get<std::string>(), "@" + host_name() + " pid "));
    CHECK(y[0]["by"].is_null());
    CHECK(contains(env.clock({"history", "x"}).out, " by "));
  }

  TEST_CASE("another user of the same SQLite file sees the holder but cannot take its lease" *
            doctest::skip(geteuid() != 0 || backend_name() != "sqlite")) {
    TestEnv env;
    // Root's `clock run` creates the database; the other user may write it
    // (and its -wal and -shm) as a group sharing it would.
    REQUIRE_EXIT(env.clock({"status"}), 1);
    fs::permissions(env.dir(), fs::perms::all, fs::perm_options::replace);
    for (const auto& entry : fs::directory_iterator(env.dir())) {
      if (entry.path().filename().string().rfind("clock.db", 0) == 0)
        fs::permissions(entry.path(), fs::perms::all, fs::perm_options::replace);
    }
    intruder_cannot_take_the_lease(env, {}, Intruder{61003, "", {}}, 0);
  }

  TEST_CASE("an owner secret given with --owner is not in ps of clock run or its guard") {
    TestEnv env;
    // The guard is a fork of clock, with a copy of clock's memory (argv too)
    // made when it forked.
    run_shows_no_secret(env, TestEnv::clock_binary());
  }

  TEST_CASE("an owner secret given with --owner is not in ps of a waiting clock acquire") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "x"});
    for (bool inline_value : {false, true}) {
      CAPTURE(inline_value);
      const std::string credential = random_owner();
      const std::string secret = secret_of(credential);
      std::vector<std::string> args = {"acquire", "-w", "60s", "-r", "x"};
      if (inline_value) {
        args.push_back("--owner=" + credential);
      } else {
        args.push_back("--owner");
        args.push_back(credential);
      }
      auto waiter = env.spawn(env.clock_command(args));
      REQUIRE(
          await([&] { return !env.status().value("waiters", json::array()).empty(); }, 30s, 20ms));
      const std::string cmdline = proc_cmdline(waiter->pid());
      CHECK(contains(cmdline, id_of(credential)));
      CHECK_FALSE(contains(cmdline, secret));
      waiter->signal(SIGTERM);
      waiter->wait();
      REQUIRE(await([&] { return env.status().value("waiters", json::array()).empty(); }, 30s));
    }
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", holder.credential}), 0);
  }

  TEST_CASE("--owner ID takes the secret from CLOCK_OWNER when it holds the same id") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "x"});
    const std::map<std::string, std::string> with_secret = {{"CLOCK_OWNER", holder.credential}};
    // Re-entry, renewal and release with the id alone on the command line.
    CHECK(parse_acquired(
              env.clock({"acquire", "-n", "-r", "x", "--owner", holder.owner, "--format", "json"},
                        with_secret)
                  .out)
              .token() == holder.token());
    CHECK_EXIT(env.clock({"renew", "-r", "x", "--owner", holder.owner}, with_secret), 0);
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", holder.owner}, with_secret), 0);
    // Another owner's secret proves nothing for this id: the id alone, 77.
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", holder.owner},
                         {{"CLOCK_OWNER", random_owner()}}),
               77);
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", holder.owner}, with_secret), 0);
    CHECK(env.holders_of("x").empty());
  }

  TEST_CASE("an owner secret in a holder's command line is stored masked, the id kept") {
    TestEnv env;
    const std::string credential = random_owner();
    const std::string secret = secret_of(credential);
    const std::string masked = id_of(credential) + ".****";
    // A helper called as `step.sh "$CLOCK_OWNER"`: acquire records its
    // parent's command line; run records the command it wraps.
    REQUIRE_EXIT(
        run(env.command({"sh", "-c", "\"$T_CLOCK\" acquire -r x; exit $?", "step.sh", credential}),
            env.path("output")),
        0);
    REQUIRE_EXIT(env.clock({"run", "-r", "y", "--", "sh", "-c", ":", "step.sh", credential}), 0);
    auto holders = env.holders_of("x");
    REQUIRE(holders.size() == 1);
    CHECK(contains(holders[0]["command"].get<std::string>(), "step.sh " + masked));
    Result status = env.clock({"status", "--format", "json"});
    Result history = env.clock({"history", "--format", "json"});
    CHECK_EXIT(history, 0);
    for (const Result* shown : {&status, &history}) {
      CHECK(contains(shown->out, masked));
      CHECK_FALSE(contains(shown->out, secret));
    }
    auto events = json::parse(history.out)["events"];
    int masked_events = 0;
    for (const auto& event : events) {
      if (contains(event["command"].get<std::string>(), "step.sh " + masked))
        ++masked_events;
    }
    CHECK(masked_events >= 3);  // x acquired, y acquired and released
  }
}
