// man clock, COMMANDS: connections are borrowed, not held. On both servers a
// running job holds no connection between its heartbeats, and a herd larger
// than the login's connection budget is served (each job once, no overlap,
// tokens increasing); on PostgreSQL the first three waiters of a queue hold
// one each to be woken by NOTIFY (the first eight while the queue moves) and
// a waiter behind them none while it waits. Each test logs in as a fresh
// role or account (server_tools.hpp; PostgreSQL's LISTEN tests: BudgetRole
// below), so its connections are counted by user name.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "harness.hpp"
#include "postgres_tools.hpp"
#include "sections.hpp"
#include "server_tools.hpp"

using namespace clk::test;
using pg::psql;

namespace {

// How many of a PostgreSQL login's backends have been open for more than
// `age` (a waiter's look opens one for some milliseconds; a listening
// waiter keeps its own).
int backends_older_than(const TestEnv& env, const server::AppLogin& login, const std::string& age) {
  Result count =
      psql(env, "SELECT count(*) FROM pg_stat_activity WHERE usename = '" + login.name() +
                    "' AND backend_type = 'client backend' AND backend_start < "
                    "now() - interval '" +
                    age + "'");
  INFO(count.describe());
  REQUIRE(count.status == 0);
  return std::stoi(count.out);
}

}  // namespace

TEST_SUITE("borrowed connections") {
  TEST_CASE("a running job holds no server connection between its heartbeats" *
            server::only_on_servers() * doctest::timeout(120)) {
    TestEnv env;
    server::AppLogin role(env, 0);
    auto job = env.spawn(env.clock_command(
        {"run", "-r", "borrowed", "--ttl", "60s", "--", "sh", "-c", env.holding_script("job")},
        role.env()));
    REQUIRE(env.await_started("job"));
    // The heartbeat is 20 s away: the grant's connection goes back after a
    // second of idleness.
    CHECK(await([&] { return role.connections() == 0; }, 30s));
    env.let_go("job");
    CHECK_EXIT(job->wait(60s), 0);
    CHECK(env.holders_of("borrowed").empty());
  }

  TEST_CASE("the first three waiters listen and a waiter behind them holds no server backend" *
            only_on("postgres") * doctest::timeout(120)) {
    TestEnv env;
    server::AppLogin role(env, 0);
    auto holder = env.spawn(env.clock_command(
        {"run", "-r", "queue", "--ttl", "60s", "--", "sh", "-c", env.holding_script("holder")},
        role.env()));
    REQUIRE(env.await_started("holder"));
    auto first = env.spawn(env.clock_command(
        {"run", "-r", "queue", "--ttl", "60s", "--", "sh", "-c", env.holding_script("first")},
        role.env()));
    REQUIRE(await([&] { return env.status({"queue"})["waiters"].size() == 1; }, 30s));
    std::vector<std::unique_ptr<Process>> behind;
    for (int i = 0; i < 5; ++i) {
      behind.push_back(env.spawn(
          env.clock_command({"run", "-r", "queue", "--ttl", "60s", "--", "true"}, role.env())));
    }
    REQUIRE(await([&] { return env.status({"queue"})["waiters"].size() == 6; }, 30s));
    // The holder's connection goes back after a second; the first three
    // waiters keep one each to LISTEN (the next is then awake when the
    // first one's turn ends); the three behind them hold none between attempts.
    CHECK(
        await([&] { return backends_older_than(env, role, "3 s") == 3 && role.connections() == 3; },
              30s));
    // And the queue still serves them all, in order.
    env.let_go("holder");
    REQUIRE(env.await_started("first"));
    env.let_go("first");
    CHECK_EXIT(holder->wait(60s), 0);
    CHECK_EXIT(first->wait(60s), 0);
    for (auto& waiter : behind)
      CHECK_EXIT(waiter->wait(60s), 0);
  }

  // A request of several resources takes try_acquire's general path, whose
  // blocked reply lists an entry per resource of each waiter in the way:
  // counted by owner, the first three waiters listen as for one resource,
  // and the ones behind them hold no backend once the queue has stood still
  // for a second. (Counted by entry, only the first two listened.)
  TEST_CASE(
      "waiters for several resources behind a holder that does not let go keep three "
      "connections" *
      only_on("postgres") * doctest::timeout(120)) {
    TestEnv env;
    server::AppLogin role(env, 0);
    auto holder =
        env.spawn(env.clock_command({"run", "-r", "pair.a", "-r", "pair.b", "--ttl", "60s", "--",
                                     "sh", "-c", env.holding_script("holder")},
                                    role.env()));
    REQUIRE(env.await_started("holder"));
    std::vector<std::unique_ptr<Process>> waiters;
    for (int i = 0; i < 6; ++i) {
      waiters.push_back(env.spawn(env.clock_command(
          {"run", "-r", "pair.a", "-r", "pair.b", "--ttl", "60s", "--", "true"}, role.env())));
    }
    REQUIRE(await([&] { return env.status({"pair"})["waiters"].size() == 12; }, 30s));
    CHECK(
        await([&] { return backends_older_than(env, role, "3 s") == 3 && role.connections() == 3; },
              30s));
    env.let_go("holder");
    CHECK_EXIT(holder->wait(60s), 0);
    for (auto& waiter : waiters)
      CHECK_EXIT(waiter->wait(60s), 0);
  }

  // With short jobs a waiter's look could not come in time to be among the
  // first three, and the lock then sat free until the first waiter looked:
  // while the queue moves, the first eight listen.
  TEST_CASE("while the queue moves, the first eight waiters keep their connection" *
            only_on("postgres") * doctest::timeout(300)) {
    TestEnv env;
    server::AppLogin role(env, 0);
    constexpr int k_jobs = 12;
    std::vector<std::unique_ptr<Process>> jobs;
    for (int i = 0; i < k_jobs; ++i) {
      jobs.push_back(env.spawn(env.shell_command(
          "exec \"$T_CLOCK\" run -r moving -w 5m -- sh -c 'sleep 0.4; exec \"$0\" \"$1\" \"$2\"' "
          "\"$T_CS\" \"$T_DIR/counter\" \"$T_DIR/log\"",
          role.env())));
    }
    // A look holds a backend for milliseconds, a listening waiter (or the
    // holder, through its 0.4 s job) for longer: the most seen at once.
    int most = 0;
    auto any_running = [&] {
      return std::any_of(jobs.begin(), jobs.end(), [](auto& job) { return job->running(); });
    };
    while (any_running() && most < 6)
      most = std::max(most, backends_older_than(env, role, "300 ms"));
    // Without the rule: the holder and three listeners at most.
    CHECK(most >= 6);
    for (auto& job : jobs)
      CHECK_EXIT(job->wait(240s), 0);
    CHECK(std::stoll("0" + read_file(env.path("counter"))) == k_jobs);
    std::vector<Section> sections = read_sections(env.path("log"));
    CHECK(sections.size() == k_jobs);
    check_sections(sections, true);
  }

  // Needs the back-off on a refused connection (53300, h-retry) when more
  // than the role's limit of clock processes connect at the same instant.
  TEST_CASE("a herd larger than the connection budget is served, each job once" *
            server::only_on_servers() * doctest::timeout(600)) {
    TestEnv env;
    server::AppLogin role(env, 20);
    std::vector<Command> commands;
    for (int i = 0; i < 100; ++i) {
      commands.push_back(env.shell_command("exec \"$T_CLOCK\" run -r herd-" + std::to_string(i) +
                                               " -- \"$T_CS\" \"$T_DIR/counter." +
                                               std::to_string(i) + "\" \"$T_DIR/log\"",
                                           role.env()));
    }
    for (const auto& result : run_all(commands, env.path("output"), 300s))
      CHECK_EXIT(result, 0);
    std::vector<Section> sections = read_sections(env.path("log"));
    CHECK(sections.size() == 100);
    std::set<long long> pids;
    for (const auto& section : sections)
      pids.insert(section.pid);
    CHECK(pids.size() == 100);
    for (int i = 0; i < 100; ++i)
      CHECK(read_file(env.path("counter." + std::to_string(i))) == "1\n");

    commands.clear();
    for (int i = 0; i < 60; ++i) {
      commands.push_back(
          env.shell_command("exec \"$T_CLOCK\" run -r one -w 5m -- \"$T_CS\" \"$T_DIR/counter\" "
                            "\"$T_DIR/log.one\"",
                            role.env()));
    }
    for (const auto& result : run_all(commands, env.path("output"), 500s))
      CHECK_EXIT(result, 0);
    CHECK(std::stoll("0" + read_file(env.path("counter"))) == 60);
    std::vector<Section> queued = read_sections(env.path("log.one"));
    CHECK(queued.size() == 60);
    check_sections(queued, true);
  }
}
