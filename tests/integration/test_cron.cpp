// Cron's view of clock (man clock, COMMANDS, quiet conventions): the cron idioms of README.md and
// the man page, run with cron's environment (env -i HOME=… PATH=/usr/bin:/bin, stdin /dev/null, no
// terminal), write nothing on stderr when all is well, since cron mails whatever a job writes
// there.
#include <signal.h>
#include <string>

#include <doctest/doctest.h>

#include "harness.hpp"

using namespace clk::test;

namespace {

// `clock ARGS…` as cron starts it: the few variables cron sets, plus those a
// crontab line would set for clock (the database URL, libpq's variables of
// the test runner and the backend's own, Backend::environment: none today).
// stdin is /dev/null and stdout/stderr are files.
Command cron_command(const TestEnv& env, const std::vector<std::string>& args) {
  Command command = env.clock_command(args);
  std::map<std::string, std::string> cron_env = {{"HOME", env.path("home").string()},
                                                 {"PATH", "/usr/bin:/bin"},
                                                 {"SHELL", "/bin/sh"},
                                                 {"LOGNAME", "cron-user"},
                                                 {"CLOCK_DATABASE_URL", env.url()}};
  for (const auto& [key, value] : command.env) {
    if (key.rfind("PG", 0) == 0 || key.find("SAN_OPTIONS") != std::string::npos)
      cron_env[key] = value;
  }
  for (const auto& [key, value] : env.backend().environment())
    cron_env[key] = value;
  command.env = cron_env;
  return command;
}

Result cron(const TestEnv& env, const std::vector<std::string>& args) {
  return run(cron_command(env, args), env.path("output"));
}

}  // namespace

TEST_SUITE("cron") {
  TEST_CASE("under cron, a run that ran writes nothing on stderr") {
    TestEnv env;
    auto ran = cron(env, {"run", "-r", "nightly", "--", "true"});
    CHECK_EXIT(ran, 0);
    CHECK(ran.err.empty());
  }

  TEST_CASE("under cron, -n skips a busy run silently, with or without -E; -v shows why") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "nightly", "--ttl", "5m"});

    auto skipped = cron(env, {"run", "-n", "-E", "0", "-r", "nightly", "--", "true"});
    CHECK_EXIT(skipped, 0);
    CHECK(skipped.err.empty());

    auto quiet = cron(env, {"-q", "run", "-n", "-E", "3", "-r", "nightly", "--", "true"});
    CHECK_EXIT(quiet, 3);
    CHECK(quiet.err.empty());

    auto verbose = cron(env, {"-v", "run", "-n", "-E", "0", "-r", "nightly", "--", "true"});
    CHECK_EXIT(verbose, 0);
    CHECK(verbose.err.find("not acquired") != std::string::npos);
    CHECK(verbose.err.find(holder.owner) != std::string::npos);

    // Without -E, -n is as quiet as flock -n under cron (man clock, COMMANDS): exit 75,
    // nothing on stderr; -v shows the error line.
    auto refused = cron(env, {"run", "-n", "-r", "nightly", "--", "true"});
    CHECK_EXIT(refused, 75);
    CHECK(refused.err.empty());
    auto told = cron(env, {"-v", "run", "-n", "-r", "nightly", "--", "true"});
    CHECK_EXIT(told, 75);
    CHECK(told.err.find("error: not acquired") != std::string::npos);
  }

  TEST_CASE("under cron, a run that waited briefly, then ran, writes nothing on stderr") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "nightly", "--ttl", "5m"});
    auto waiter = env.spawn(cron_command(env, {"run", "-r", "nightly", "--", "true"}));
    // Past the moment (1 s) at which a terminal would show its waiting line.
    REQUIRE(await(
        [&] {
          for (const auto& w : env.status().value("waiters", nlohmann::json::array())) {
            if (w.value("resource", "") == "nightly" && w.value("waited_ms", 0LL) > 1500)
              return true;
          }
          return false;
        },
        30s, 100ms));
    CHECK_EXIT(env.clock({"release", "-r", "nightly", "--owner", holder.credential}), 0);
    auto waited = waiter->wait();
    CHECK_EXIT(waited, 0);
    CHECK(waited.err.empty());
  }
}

TEST_SUITE("cron") {
  TEST_CASE("--jitter waits a random part of D before the first attempt; -v shows it") {
    TestEnv env;
    auto quiet = cron(env, {"run", "--jitter", "200ms", "-r", "nightly", "--", "true"});
    CHECK_EXIT(quiet, 0);
    CHECK(quiet.err.empty());

    auto shown = cron(env, {"-v", "run", "--jitter", "300ms", "-r", "nightly", "--", "true"});
    CHECK_EXIT(shown, 0);
    CHECK(shown.err.find("jitter: waiting ") != std::string::npos);
    CHECK(shown.err.find("(of --jitter 300ms)") != std::string::npos);

    CHECK_EXIT(env.clock({"run", "--jitter", "soon", "-r", "nightly", "--", "true"}), 64);
  }

  TEST_CASE("a signal during --jitter ends clock of that signal; the command never runs") {
    TestEnv env;
    auto jittering = env.spawn(
        env.shell_command("exec \"$T_CLOCK\" -v run --jitter 1h -r nightly -- touch \"$T_DIR/ran\" "
                          "2>\"$T_DIR/jitter.err\""));
    REQUIRE(await(
        [&] {
          return read_file(env.path("jitter.err")).find("jitter: waiting") != std::string::npos;
        },
        30s));
    jittering->signal(SIGTERM);
    auto ended = jittering->wait();
    CHECK(ended.signaled);
    CHECK_EXIT(ended, 128 + SIGTERM);
    CHECK_FALSE(fs::exists(env.path("ran")));
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "nightly"}), 0);
  }
}
