// clock run (man clock, COMMANDS): the child's status passes through, the lock is held
// exactly while the child runs, signals reach the child, the child never
// outlives a killed clock, and nested runs re-enter.
#include <ctime>
#include <iomanip>
#include <regex>
#include <set>
#include <signal.h>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <vector>

#include <doctest/doctest.h>

#include "fault_tools.hpp"
#include "harness.hpp"

using namespace clk::test;

namespace {

// Milliseconds since the epoch of status's "2026-11-29T01:23:41.123Z".
long long ms_of(const std::string& iso8601) {
  std::tm utc{};
  std::istringstream in(iso8601);
  in >> std::get_time(&utc, "%Y-%m-%dT%H:%M:%S");
  REQUIRE_MESSAGE(!in.fail(), iso8601);
  return static_cast<long long>(timegm(&utc)) * 1000 + std::stoll(iso8601.substr(20, 3));
}

}  // namespace

TEST_SUITE("run") {
  TEST_CASE("clock run passes the child's exit status through and releases the lock") {
    TestEnv env;
    CHECK_EXIT(env.clock({"run", "-r", "x", "--", "sh", "-c", "exit 42"}), 42);
    CHECK_EXIT(env.clock({"run", "-r", "x", "--", "true"}), 0);
    CHECK_EXIT(env.clock({"run", "-r", "x", "--", "false"}), 1);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x"}), 0);
  }

  TEST_CASE("clock run holds the lock while the child runs and gives it CLOCK_ variables") {
    TestEnv env;
    std::string script = env.holding_script(
        "child",
        "printf '%s\\n%s\\n%s\\n' \"$CLOCK_OWNER\" \"$CLOCK_RESOURCE\" \"$CLOCK_TOKEN\" "
        "> \"$T_DIR/vars\"");
    auto run = env.spawn(env.clock_command({"run", "-r", "x", "--", "sh", "-c", script}));
    REQUIRE(env.await_started("child"));

    std::istringstream vars(read_file(env.path("vars")));
    std::string owner, resource, token;
    std::getline(vars, owner);
    std::getline(vars, resource);
    std::getline(vars, token);
    CHECK(owner.size() == 36 + 1 + 32);  // ID.SECRET
    owner = id_of(owner);
    CHECK(is_uuid(owner));
    CHECK(resource == "x");
    auto holders = env.holders_of("x");
    REQUIRE(holders.size() == 1);
    CHECK(holders[0]["owner"] == owner);
    CHECK(std::to_string(holders[0]["token"].get<long long>()) == token);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x"}), 75);

    env.let_go("child");
    CHECK_EXIT(run->wait(30s), 0);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x"}), 0);
  }

  TEST_CASE("clock run with several -r holds all of them while the child runs") {
    TestEnv env;
    std::string script = env.holding_script(
        "child", "printf '%s\\n%s\\n' \"$CLOCK_RESOURCE\" \"$CLOCK_TOKEN\" > \"$T_DIR/vars\"");
    auto run =
        env.spawn(env.clock_command({"run", "-r", "b", "-r", "a", "--", "sh", "-c", script}));
    REQUIRE(env.await_started("child"));
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "a"}), 75);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "b"}), 75);

    std::istringstream vars(read_file(env.path("vars")));
    std::string resources, tokens;
    std::getline(vars, resources);
    std::getline(vars, tokens);
    CHECK((resources == "a,b" || resources == "b,a"));
    CHECK(std::regex_match(tokens, std::regex("[0-9]+,[0-9]+")));

    env.let_go("child");
    CHECK_EXIT(run->wait(30s), 0);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "a", "-r", "b"}), 0);
  }

  TEST_CASE("clock run -n of a held lock exits 75 without running the command") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "x"});
    std::string touch = "touch \"$T_DIR/ran\"";
    CHECK_EXIT(env.clock({"run", "-n", "-r", "x", "--", "sh", "-c", touch}), 75);
    CHECK_EXIT(env.clock({"run", "-n", "-r", "x", "-E", "3", "--", "sh", "-c", touch}), 3);
    CHECK_FALSE(fs::exists(env.path("ran")));
  }

  TEST_CASE("clock run -w 1s against a held lock exits 75 after about a second") {
    TestEnv env;
    env.acquire({"-r", "x"});
    Result waited = env.clock({"run", "-w", "1s", "-r", "x", "--", "true"});
    CHECK_EXIT(waited, 75);
    CHECK(waited.seconds >= 0.8);
    CHECK(waited.seconds <= 5.0);
  }

  TEST_CASE("clock run -r a -r b takes neither while another owner holds b") {
    TestEnv env;
    env.acquire({"-r", "b"});
    CHECK_EXIT(env.clock({"run", "-n", "-r", "a", "-r", "b", "--", "true"}), 75);
    CHECK(env.holders_of("a").empty());
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "a"}), 0);
  }

  TEST_CASE("a child killed by SIGTERM makes clock run exit 143") {
    TestEnv env;
    CHECK_EXIT(env.clock({"run", "-r", "x", "--", "sh", "-c", "kill -TERM $$"}), 143);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x"}), 0);
  }

  TEST_CASE(
      "SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to clock run reach the "
      "child") {
    int number = 0;
    std::string name;
    SUBCASE("INT") {
      number = SIGINT, name = "INT";
    }
    SUBCASE("TERM") {
      number = SIGTERM, name = "TERM";
    }
    SUBCASE("HUP") {
      number = SIGHUP, name = "HUP";
    }
    SUBCASE("QUIT") {
      number = SIGQUIT, name = "QUIT";
    }
    SUBCASE("USR1") {
      number = SIGUSR1, name = "USR1";
    }
    SUBCASE("USR2") {
      number = SIGUSR2, name = "USR2";
    }
    CAPTURE(name);
    TestEnv env;
    std::string script = "trap 'echo " + name + " > \"$T_DIR/signal\"; exit 7' " + name + "\n" +
                         env.holding_script("child");
    auto run = env.spawn(env.clock_command({"run", "-r", "x", "--", "sh", "-c", script}));
    REQUIRE(env.await_started("child"));
    run->signal(number);
    Result result = run->wait(30s);
    CHECK_EXIT(result, 7);
    CHECK(read_file(env.path("signal")) == name + "\n");
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x"}), 0);
  }

  TEST_CASE("kill -9 of clock run takes its child down") {
    TestEnv env;
    auto run = env.spawn(env.clock_command(
        {"run", "-r", "x", "--", "sh", "-c", "echo $$ > \"$T_DIR/pid\"; exec sleep 1000"}));
    pid_t child = await_pid_file(env, "pid");
    REQUIRE(child > 0);
    REQUIRE(await([&] { return process_alive(child); }, 10s));

    run->signal(SIGKILL);
    Result killed = run->wait(10s);
    CHECK(killed.status == 128 + SIGKILL);
    bool gone = await([&] { return !process_alive(child); }, 5s);
    if (!gone)
      kill(child, SIGKILL);  // do not leave it behind
    CHECK_MESSAGE(gone, "the child of a killed clock run kept running");
    // A crash frees the lock early only for this host, which can see that
    // its holder died (test_dead_holder.cpp): another host waits for the TTL.
    Command elsewhere = env.clock_command({"acquire", "-n", "-r", "x"});
    auto prefix = another_pid_namespace();
    elsewhere.argv.insert(elsewhere.argv.begin(), prefix.begin(), prefix.end());
    CHECK_EXIT(clk::test::run(elsewhere, env.path("output")), 75);
  }

  TEST_CASE("a short command runs beside clock alone: the heartbeat thread starts when first due") {
    TestEnv env;
    // The thread costs a short run more than its work; it starts at the
    // first renewal or check (SQLite: 200 ms; PostgreSQL: when the grant's
    // connection is given back, 1 s). The second half shows that the first
    // could see it.
    std::string threads = "cat /proc/$PPID/task/*/comm";
    std::string script = threads + " > \"$T_DIR/early\"; i=0; until " + threads +
                         " | grep -qx clock-heartbeat; do i=$((i + 1)); [ $i -lt 500 ] || exit 3; "
                         "sleep 0.02; done";
    CHECK_EXIT(env.clock({"run", "-r", "x", "--", "sh", "-c", script}), 0);
    CHECK(read_file(env.path("early")).find("clock-heartbeat") == std::string::npos);
  }

  TEST_CASE("a nested clock run on the same resource re-enters instead of deadlocking") {
    TestEnv env;
    std::string inner = "echo \"$CLOCK_TOKEN\" > \"$T_DIR/inner\"";
    std::string outer =
        "echo \"$CLOCK_TOKEN\" > \"$T_DIR/outer\"\n"
        "exec \"$T_CLOCK\" run -w 5s -r x -- sh -c '" +
        inner + "'";
    Result nested = env.clock({"run", "-r", "x", "--", "sh", "-c", outer}, {}, 60s);
    CHECK_EXIT(nested, 0);
    std::string outer_token = read_file(env.path("outer"));
    CHECK_FALSE(outer_token.empty());
    CHECK(read_file(env.path("inner")) == outer_token);      // re-entry keeps the token
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x"}), 0);  // both levels released
  }

  TEST_CASE("a command that does not exist exits 127 and the lock is released at once") {
    TestEnv env;
    Result missing = env.clock({"run", "-r", "x", "--", "/nonexistent/command"});
    CHECK_EXIT(missing, 127);
    CHECK(missing.err_lines().size() == 1);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x"}), 0);
    CHECK_EXIT(env.clock({"run", "-r", "y", "--", "no-such-command-in-path"}), 127);
  }

  TEST_CASE("a command that cannot be executed exits 126 and the lock is released at once") {
    TestEnv env;
    write_file(env.path("not-executable"), "#!/bin/sh\necho hi\n");
    fs::permissions(env.path("not-executable"), fs::perms::owner_read | fs::perms::owner_write,
                    fs::perm_options::replace);
    CHECK_EXIT(env.clock({"run", "-r", "x", "--", env.path("not-executable").string()}), 126);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x"}), 0);
  }

  // The child starts on a stack of its own where clock makes a job cgroup
  // (src/run/vfork_into_cgroup.cpp): exec's PATH search, and for a script
  // without #! the shell's argv, are built on that stack, as large as the
  // argument list.
  TEST_CASE("a script without #! and 50,000 arguments starts, found on the PATH") {
    TestEnv env;
    fs::create_directories(env.path("bin"));
    write_file(env.path("bin") / "count-args", "echo \"$# arguments, the last ${50000}\"\n");
    fs::permissions(env.path("bin") / "count-args", fs::perms::owner_all,
                    fs::perm_options::replace);
    std::vector<std::string> args = {"run", "-r", "x", "--", "count-args"};
    for (int i = 1; i <= 50000; ++i)
      args.push_back(std::to_string(i));
    Command command = env.clock_command(args);
    command.env["PATH"] = env.path("bin").string() + ":/usr/bin:/bin";
    Result result = run(command, env.path("output"));
    CHECK_EXIT(result, 0);
    CHECK(result.out == "50000 arguments, the last 50000\n");
  }

  TEST_CASE("the child's stdin and stdout are clock run's own") {
    TestEnv env;
    Command cat = env.clock_command({"run", "-r", "x", "--", "cat"});
    cat.stdin_text = "line one\nline two\n";
    Result result = run(cat, env.path("output"));
    CHECK_EXIT(result, 0);
    CHECK(result.out == "line one\nline two\n");
  }

  TEST_CASE("a TTL too short to renew in time is refused at start") {
    TestEnv env;
    Result refused = env.clock({"run", "-r", "x", "--ttl", "1s", "--kill-after", "10s", "--", "sh",
                                "-c", "touch \"$T_DIR/ran\""});
    CHECK_EXIT(refused, 64);
    CHECK(refused.err_lines().size() == 1);
    CHECK_FALSE(fs::exists(env.path("ran")));
  }

  TEST_CASE("clock run -v states the outage the lease rides out, in one line at start") {
    TestEnv env;
    Result result = env.clock({"run", "-v", "-r", "x", "--", "true"});
    CHECK_EXIT(result, 0);
    int budget_lines = 0;
    for (const std::string& line : result.err_lines()) {
      if (line.find("rides out a database outage of") != std::string::npos) {
        ++budget_lines;
        CHECK(line.find("lease x: ttl 1m30s, renewed every 9s") != std::string::npos);
      }
    }
    CHECK(budget_lines == 1);
  }

  TEST_CASE("explicit timings that ride out under 5s of outage are warned about once, and run") {
    TestEnv env;
    Result result = env.clock({"run", "-r", "x", "--ttl", "20s", "--heartbeat", "8s",
                               "--kill-after", "10s", "--", "sh", "-c", "touch \"$T_DIR/ran\""});
    CHECK_EXIT(result, 0);
    CHECK(fs::exists(env.path("ran")));
    std::vector<std::string> lines = result.err_lines();
    REQUIRE(lines.size() == 1);
    const std::string& warning = lines[0];
    CHECK(warning.find("warning") != std::string::npos);
    CHECK(warning.find("--heartbeat") != std::string::npos);
    CHECK(warning.find("--kill-after") != std::string::npos);
  }

  TEST_CASE("the config file's heartbeat and kill_after keep their values and are warned about") {
    TestEnv env;
    write_file(env.path("timings.toml"),
               "[lock]\nttl = \"20s\"\nheartbeat = \"8s\"\n"
               "kill_after = \"10s\"\n");
    Result result = env.clock(
        {"--config", env.path("timings.toml").string(), "run", "-v", "-r", "x", "--", "true"});
    CHECK_EXIT(result, 0);
    CHECK(result.err.find("ttl 20s, renewed every 8s, the command is stopped 11s before expiry "
                          "(--kill-after 10s + 1s margin): rides out a database outage of 1s") !=
          std::string::npos);
    CHECK(result.err.find("only 1s (--ttl 20s, --heartbeat 8s, --kill-after 10s)") !=
          std::string::npos);
  }

  TEST_CASE("clock run with default timings prints nothing on a non-terminal") {
    TestEnv env;
    Result result = env.clock({"run", "-r", "x", "--", "true"});
    CHECK_EXIT(result, 0);
    CHECK(result.err.empty());
    Result short_ttl = env.clock({"run", "-r", "x", "--ttl", "2s", "--", "true"});
    CHECK_EXIT(short_ttl, 0);
    CHECK(short_ttl.err.empty());
  }

  TEST_CASE("a lease lost while the child runs stops the child and exits 79") {
    TestEnv env;
    std::string script =
        "trap 'echo stopped > \"$T_DIR/term\"; exit 0' TERM\n" + env.holding_script("child");
    auto run =
        env.spawn(env.clock_command({"run", "-r", "x", "--ttl", "30s", "--heartbeat", "500ms",
                                     "--kill-after", "2s", "--", "sh", "-c", script}));
    REQUIRE(env.await_started("child"));
    CHECK_EXIT(env.clock({"release", "-r", "x", "--force"}), 0);
    Acquired other = env.acquire({"-n", "-r", "x"});  // someone else now holds it

    Result lost = run->wait(60s);
    CHECK_EXIT(lost, 79);
    CHECK(read_file(env.path("term")) == "stopped\n");
    CHECK_FALSE(lost.err_lines().empty());
    // The new holder keeps its lease.
    auto holders = env.holders_of("x");
    REQUIRE(holders.size() == 1);
    CHECK(holders[0]["owner"] == other.owner);
  }

  // The "ran unprotected since" line of a run whose lease was lost before the
  // command finished and found lost only by the release after it.
  bool says_ran_unprotected(const Result& result) {
    static const std::regex line(
        "the command finished with status 0 but ran unprotected since "
        "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z");
    return std::regex_search(result.err, line);
  }

  TEST_CASE(
      "a lease force-released while the command runs, found lost only by the release after a "
      "command that exits 0, makes clock run exit 79 saying since when" *
      only_on("postgres")) {
    // PostgreSQL has no check between renewals: the first renewal is 30 s
    // away, so only the release finds the loss.
    TestEnv env;
    auto run = env.spawn(
        env.clock_command({"run", "-r", "x", "--", "sh", "-c", env.holding_script("child")}));
    REQUIRE(env.await_started("child"));
    CHECK_EXIT(env.clock({"release", "-r", "x", "--force"}), 0);
    env.let_go("child");
    Result finished = run->wait(60s);
    CHECK_EXIT(finished, 79);
    CHECK_MESSAGE(says_ran_unprotected(finished), finished.err);
    CHECK(finished.err_lines().size() == 1);
  }

  TEST_CASE(
      "with --on-lease-lost warn, a command that ran on after its lease was force-released and "
      "exits 0 makes clock run exit 79 saying since when") {
    TestEnv env;
    auto run = env.spawn(env.clock_command({"run", "-r", "x", "--on-lease-lost", "warn", "--", "sh",
                                            "-c", env.holding_script("child")}));
    REQUIRE(env.await_started("child"));
    CHECK_EXIT(env.clock({"release", "-r", "x", "--force"}), 0);
    Acquired other = env.acquire({"-n", "-r", "x"});  // someone else now holds it
    env.let_go("child");
    Result finished = run->wait(60s);
    CHECK_EXIT(finished, 79);
    CHECK_MESSAGE(says_ran_unprotected(finished), finished.err);
    // Its release leaves the new holder's lease alone.
    auto holders = env.holders_of("x");
    REQUIRE(holders.size() == 1);
    CHECK(holders[0]["owner"] == other.owner);
  }

  TEST_CASE(
      "a holder learns within about a second that its lease was force-released, stops its "
      "command and exits 79: on SQLite always, on PostgreSQL with --watch-lease" *
      not_on("mariadb",
             "a holder learns of a forced release within a second: MariaDB has no LISTEN, so "
             "a forced holder learns at its next renewal (docs/mariadb.md)")) {
    // Default --ttl and --heartbeat: the first renewal is 9 s away.
    TestEnv env;
    std::vector<std::string> args = {"run", "-r", "x"};
    const bool postgres = backend_name() == "postgres";
    if (postgres) {
      args.push_back("--watch-lease");
      args.push_back("-v");
    }
    for (std::string word : {"--", "sh", "-c", "echo $$ > \"$T_DIR/pid\"; exec sleep 60"})
      args.push_back(word);
    auto run = env.spawn(env.clock_command(args));
    pid_t child = await_pid_file(env, "pid");
    REQUIRE(child > 0);
    // A release before the watch listens would be found by its first look
    // anyway: let the notification be what tells it.
    if (postgres) {
      REQUIRE(await(
          [&] {
            return read_file(run->err_path()).find("listening for the loss") != std::string::npos;
          },
          20s));
    }
    CHECK_EXIT(env.clock({"release", "-r", "x", "--force"}), 0);
    auto released = Clock::now();
    Result stopped = run->wait(6s);  // generous, and shorter than the first renewal
    double seconds = std::chrono::duration<double>(Clock::now() - released).count();
    CHECK_EXIT(stopped, 79);
    bool gone = await([&] { return !process_alive(child); }, 5s);
    if (!gone)
      kill(child, SIGKILL);  // do not leave it behind
    CHECK_MESSAGE(gone, "the command kept running after its lease was lost");
    CHECK(stopped.err.find("the lease on x was lost") != std::string::npos);
    MESSAGE("clock run exited " << stopped.status << " " << seconds
                                << " s after the forced release returned");
  }

  TEST_CASE(
      "a holder's checks between renewals take other processes' commits and its own nested "
      "re-entry for what they are, not for a loss") {
    TestEnv env;
    std::string nested = "\"" + TestEnv::clock_binary() + "\" run -r x -- true || exit 9\n";
    auto run = env.spawn(env.clock_command(
        {"run", "-r", "x", "--", "sh", "-c", env.holding_script("child", nested)}));
    REQUIRE(env.await_started("child"));
    for (int i = 0; i < 5; ++i) {
      CHECK_EXIT(env.clock({"run", "-r", "y", "--", "sleep", "0.1"}), 0);
    }
    env.let_go("child");
    Result finished = run->wait(60s);
    CHECK_EXIT(finished, 0);
    CHECK(finished.err.empty());
  }

  // A renewal in the same second as the grant, or as the renewal before,
  // changes nothing a second-precision column could see: it must not read
  // as "0 rows changed", a lost lease (the bug of DATETIME(0) expiries).
  TEST_CASE("a 1 s lease renewed every third of a second for two seconds is never lost") {
    TestEnv env;
    // On a database clock has not set up yet, MariaDB's first run loses
    // its 1 s lease before its first renewal (exit 79): set up first.
    REQUIRE_EXIT(env.clock({"init"}), 0);
    auto run = env.spawn(env.clock_command({"run", "--ttl", "1s", "-r", "same.second", "--", "sh",
                                            "-c", env.holding_script("child")}));
    REQUIRE(env.await_started("child"));
    long long acquired = 0, renewed = 0;
    bool renewed_for_two_seconds = await(
        [&] {
          auto holders = env.holders_of("same.second");
          REQUIRE(holders.size() == 1);
          acquired = ms_of(holders[0]["acquired_at"]);
          renewed = ms_of(holders[0]["renewed_at"]);
          // Each renewal sets the lease to expire one TTL later.
          CHECK(ms_of(holders[0]["expires_at"]) - renewed == 1000);
          return renewed - acquired >= 2000;
        },
        30s, 50ms);
    INFO("renewed " << renewed - acquired << " ms after the grant");
    CHECK(renewed_for_two_seconds);
    env.let_go("child");
    Result finished = run->wait(60s);
    CHECK_EXIT(finished, 0);
    CHECK(finished.err.empty());
    Result history = env.clock({"history", "same.second", "--format", "json"});
    REQUIRE_EXIT(history, 0);
    const nlohmann::json reply = nlohmann::json::parse(history.out);
    std::vector<std::string> events;  // newest first
    std::set<long long> tokens;
    for (const auto& event : reply.at("events")) {
      events.push_back(event.at("event"));
      tokens.insert(event.at("token").get<long long>());
    }
    INFO(history.out);
    CHECK(events == std::vector<std::string>{"released", "acquired"});
    CHECK(tokens.size() == 1);
    CHECK(env.holders_of("same.second").empty());
  }
}
