// Server trouble is waited out, not fatal (docs/server-trouble.md), written
// once for both SQL servers (server_tools.hpp): a server that restarts under
// a running job and a waiter, directly and (PostgreSQL) through pgbouncer;
// a release during an outage that gives up once the lease has lapsed. The
// outage tests stop the test server and bring it back before they return,
// whatever happened. PostgreSQL's own cases (a pooler, a full server, a
// lost reply): test_server_trouble_postgres.cpp.
#include <chrono>
#include <string>
#include <thread>

#include <doctest/doctest.h>

#include "common_helpers.hpp"
#include "harness.hpp"
#include "postgres_tools.hpp"
#include "server_tools.hpp"

using namespace clk::test;
using nlohmann::json;

namespace {

// A `clock -v run -w 30s -r job` that writes its token to NAME.token, its
// log in NAME.err (so the test can see that it met the trouble).
std::unique_ptr<Process> queued_run(const TestEnv& env, const std::string& name,
                                    const std::map<std::string, std::string>& extra_env) {
  return env.spawn(env.shell_command(
      "exec \"$T_CLOCK\" -v run -w 30s -r job -- sh -c 'echo $CLOCK_TOKEN > \"$T_DIR/" + name +
          ".token\"' 2>\"$T_DIR/" + name + ".err\"",
      extra_env));
}

long long token_in(const TestEnv& env, const std::string& name) {
  std::string text = read_file(env.path(name + ".token"));
  return text.empty() ? 0 : std::stoll(text);
}

// A holder on `job` and a waiter queued behind it; the server stopped for
// 3 s (clients see their connections closed, then refused); the holder let
// go once it is back: both exit 0, the waiter after the holder (a larger
// token), and history shows two releases and no loss.
void restart_under_a_waiter(const TestEnv& env, const std::map<std::string, std::string>& url) {
  auto holder = env.spawn(env.clock_command(
      {"run", "-r", "job", "--", "sh", "-c",
       env.holding_script("holder", "echo $CLOCK_TOKEN > \"$T_DIR/holder.token\"")},
      url));
  REQUIRE(env.await_started("holder"));
  auto queued = queued_run(env, "waiter", url);
  REQUIRE(await([&] { return !env.status({"job"}).at("waiters").empty(); }, 30s, 50ms));

  REQUIRE_EXIT(server::stop(env), 0);
  std::this_thread::sleep_for(3s);  // the outage: the waiter's looks fail meanwhile
  REQUIRE_EXIT(server::start(env), 0);
  REQUIRE(await([&] { return server::answers(env); }, 60s, 100ms));
  env.let_go("holder");

  Result held = holder->wait(60s);
  CHECK_EXIT(held, 0);
  Result granted = queued->wait(60s);
  INFO(read_file(env.path("waiter.err")));
  CHECK_EXIT(granted, 0);
  CHECK(token_in(env, "waiter") > token_in(env, "holder"));
  CHECK(token_in(env, "holder") > 0);

  Result history = env.clock({"history", "--format", "json", "job"});
  REQUIRE_EXIT(history, 0);
  INFO(history.out);
  const json read = json::parse(history.out);
  std::string events;  // oldest first
  for (const auto& event : read.at("events"))
    events = event.at("event").get<std::string>() + (events.empty() ? "" : ",") + events;
  CHECK(events == "acquired,released,acquired,released");
  CHECK(env.status({"job"}).at("holders").empty());
}

}  // namespace

TEST_SUITE("server-trouble") {
  TEST_CASE(
      "a server stopped for 3 s under a holder and a -w 30s waiter: both run, in turn, nothing "
      "lost" *
      doctest::timeout(300) * server::only_on_servers()) {
    TestEnv env;
    server::Restorer restorer(env);
    REQUIRE_EXIT(env.clock({"init"}), 0);
    restart_under_a_waiter(env, {});
  }

  TEST_CASE("the same through pgbouncer: the waiter rides out the restart and runs" *
            doctest::timeout(300) * ::clk::test::only_on("postgres")) {
    TestEnv env;
    server::Restorer restorer(env);
    std::string url = pg::pgbouncer_url(env);
    if (url.empty()) {
      MESSAGE("skipped: CLOCK_TEST_PGBOUNCER_URL is not set (with-postgres.sh found no pgbouncer)");
      return;
    }
    std::map<std::string, std::string> through_bouncer = {{"CLOCK_DATABASE_URL", url}};
    REQUIRE_EXIT(env.clock({"init"}, through_bouncer), 0);
    restart_under_a_waiter(env, through_bouncer);
  }

  // clock run's release keeps trying through an outage only until the lease
  // would have lapsed anyway (its last renewal + TTL + 1 s), not for the
  // 30 s a release may take: the command has finished, and a lease nobody
  // renews protects nothing after that.
  TEST_CASE("a release during an outage gives up once the lease has lapsed, not after 30 s" *
            doctest::timeout(300) * server::only_on_servers()) {
    TestEnv env;
    server::Restorer restorer(env);
    REQUIRE_EXIT(env.clock({"init"}), 0);
    auto job = env.spawn(env.clock_command(
        {"run", "-r", "job", "--ttl", "3s", "--", "sh", "-c", env.holding_script("job")}));
    REQUIRE(env.await_started("job"));

    REQUIRE_EXIT(server::stop(env), 0);
    const auto outage = std::chrono::steady_clock::now();
    env.let_go("job");
    Result ended = job->wait(60s);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - outage).count();
    MESSAGE("clock run ended " << seconds << " s into the outage, exit " << ended.status);
    CHECK_EXIT(ended, 0);  // the command's own status: it finished while the lease held
    CHECK(ended.err.find("releasing after the command") != std::string::npos);
    CHECK(seconds < 15);  // the lease lapsed within about 4 s; a release alone may take 30
  }
}
