// What the record-keeping routines (renew, leave_queue, record_missed_run,
// expect_runs, gc_batch, force_release, release) guarantee to a caller that
// is not clock: the arguments clock never sends (another token, another
// request id, a batch of two, a wrong secret for a period, resources in an
// order of their own), raw calls of this release's routine set as the
// server's superuser, one body for PostgreSQL and MariaDB. Leases are taken
// and what the calls leave is read through clock.
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "fault_tools.hpp"
#include "harness.hpp"
#include "mariadb_tools.hpp"
#include "postgres_tools.hpp"
#include "server_tools.hpp"

using namespace clk::test;
using nlohmann::json;

namespace {

// The first line that `routine(args)` returns; the call must succeed.
std::string value_of(const TestEnv& env, const std::string& routine, const std::string& args) {
  return server::sql_value(env, server::call(env, routine, args));
}

json reply_of(const TestEnv& env, const std::string& routine, const std::string& args) {
  json reply = json::parse(value_of(env, routine, args));
  INFO(reply.dump());
  return reply;
}

// A boolean returned by a routine: PostgreSQL prints t or f, MariaDB 1 or 0.
bool yes(const std::string& value) {
  return value == "t" || value == "1";
}

// One batch of gc_batch; MariaDB's takes an expiry margin too (0 here).
json gc_batch(const TestEnv& env, const std::string& batch, const std::string& older_than_ms,
              bool dry_run) {
  return reply_of(env, "gc_batch",
                  batch + ", " + older_than_ms + ", " + (dry_run ? "true" : "false") +
                      (server::on_postgres() ? "" : ", 0"));
}

// A gc batch's reply as "expired_leases dead_waiters history_rows".
std::string counts_of(const json& reply) {
  INFO(reply.dump());
  return reply["expired_leases"].dump() + " " + reply["dead_waiters"].dump() + " " +
         reply["history_rows"].dump();
}

// `sql` run on the test's database as the superuser; it must succeed.
void run_sql(const TestEnv& env, const server::Dialects& sql) {
  Result result = server::sql(env, sql);
  INFO(result.describe());
  REQUIRE(result.status == 0);
}

// The lease on `resource` made to expire `seconds_ago` (directly in the
// table: no waiting for a real expiry).
void expire(const TestEnv& env, const std::string& resource, int seconds_ago) {
  const std::string ago = std::to_string(seconds_ago);
  run_sql(env, {.postgres = "UPDATE clock.leases SET expires_at = now() - interval '" + ago +
                            " s' WHERE resource = '" + resource + "'",
                .mariadb = "UPDATE leases SET expires_us = clock_now_us() - " + ago +
                           "000000 WHERE resource = '" + resource + "'"});
}

// The expected run of `resource` that status lists, or null.
json expected_run(const TestEnv& env, const std::string& resource) {
  const json status = env.status();
  for (const auto& run : status["expected"]) {
    if (run["resource"] == resource)
      return run;
  }
  return nullptr;
}

std::size_t events_counted(const TestEnv& env, const std::string& kind, const std::string& by) {
  Result history = env.clock({"history", "--event", kind, "--format", "json", "--limit", "1000"});
  REQUIRE_EXIT(history, 0);
  std::size_t count = 0;
  const json events = json::parse(history.out)["events"];
  for (const auto& event : events)
    count += by.empty() || event["by"] == by;
  return count;
}

// A clock acquire queued for `resource` as `credential`, then killed: its
// queue entry stays (until its lifetime ends, 30 s at the default TTL).
void leave_dead_waiter(const TestEnv& env, const std::string& resource,
                       const std::string& credential) {
  const std::size_t before = env.status()["waiters"].size();
  auto waiter =
      env.spawn(env.clock_command({"acquire", "-w", "60s", "-r", resource, "--owner", credential}));
  REQUIRE(await([&] { return env.status()["waiters"].size() == before + 1; }, 30s, 20ms));
  waiter->signal(SIGKILL);
  waiter->wait(30s);
}

// A client sending each of `statements` as a transaction of its own
// (psql -c … -c …; MariaDB's procedures commit their own).
Command client_of(const TestEnv& env, const std::vector<server::Dialects>& statements) {
  if (server::on_postgres()) {
    std::vector<std::string> argv = {"psql", "-X",     "-A", "-t", "-v", "ON_ERROR_STOP=1",
                                     "-d",   env.url()};
    for (const auto& statement : statements) {
      argv.push_back("-c");
      argv.push_back(statement.postgres);
    }
    return env.command(argv);
  }
  std::string all;
  for (const auto& statement : statements)
    all += statement.mariadb + ";\n";
  return maria::client_command(env, "root", all);
}

std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++count;
  return count;
}

}  // namespace

TEST_SUITE("record calls") {
  TEST_CASE("renew under another token than the lease's is refused as 'token' and changes nothing" *
            server::only_on_servers()) {
    TestEnv env;
    Acquired held = env.acquire({"-r", "r.proof", "--ttl", "60s"});
    const json before = only_holder(env, "r.proof");
    json reply = reply_of(env, "renew",
                          "'', " + server::array_of({"r.proof"}) + ", '" + held.owner + "', " +
                              server::array_of({std::to_string(held.token() + 1)}) +
                              ", 3600000, '" + secret_of(held.credential) + "', 'x'");
    CHECK(reply["outcome"] == "not_owner");
    CHECK(reply["lost"] == json::parse(R"([{"resource": "r.proof", "reason": "token"}])"));
    const json after = only_holder(env, "r.proof");
    CHECK(after["token"] == before["token"]);
    CHECK(after["expires_at"] == before["expires_at"]);
    // The caller's lease under the token it named is lost to it: recorded so.
    const auto events = history_of(env, "r.proof");
    REQUIRE(events.size() == 2);
    CHECK(events[1]["event"] == "lost");
    CHECK(events[1]["token"] == held.token() + 1);
  }

  TEST_CASE("leave_queue with another request id removes nothing; with none, the owner's entry" *
            server::only_on_servers()) {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "q"});
    const std::string waiter = random_owner();
    leave_dead_waiter(env, "q", waiter);
    const std::string head = "'', " + server::array_of({"q"}) + ", '" + id_of(waiter) + "', ";
    const std::string secret = ", '" + secret_of(waiter) + "'";
    CHECK(value_of(env, "leave_queue", head + "'other-request'" + secret) == "0");
    CHECK(env.status()["waiters"].size() == 1);
    CHECK(value_of(env, "leave_queue", head + "NULL" + secret) == "1");
    CHECK(env.status()["waiters"].empty());
    CHECK(events_counted(env, "refused", "") == 0);
  }

  // MariaDB's refusal says "timed_out or killed": a skipped run is recorded
  // by its try_acquire, not through this procedure.
  TEST_CASE(
      "record_missed_run takes only a run that did not happen, and without the owner's secret "
      "records a refusal instead" *
      server::only_on_servers()) {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "m.c"});
    const std::string tail = ", '', " + server::array_of({"m.c"}) + ", '" + holder.owner +
                             "', 'exclusive', 'h', 'i', 1, 'u', 'c', NULL, ";
    Result released = server::sql(
        env, server::call(env, "record_missed_run",
                          "'released'" + tail + "'" + secret_of(holder.credential) + "'"));
    INFO(released.describe());
    CHECK(released.status != 0);
    CHECK(released.err.find("record_missed_run: the event is") != std::string::npos);
    CHECK(value_of(env, "record_missed_run", "'killed'" + tail + "'wrong'") == "0");
    CHECK(events_counted(env, "killed", "") == 0);
    CHECK(events_counted(env, "refused", "") == 1);
    CHECK(value_of(env, "record_missed_run",
                   "'killed'" + tail + "'" + secret_of(holder.credential) + "'") == "1");
    CHECK(events_counted(env, "killed", "") == 1);
  }

  TEST_CASE(
      "expect_runs declares a period only for the holder of every resource named, with its "
      "secret; a new period keeps when it was first declared; a period of 0 is refused" *
      server::only_on_servers()) {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "e.a", "-r", "e.b", "--ttl", "1h"});
    const std::string owner = "'" + holder.owner + "', ";
    const std::string secret = "'" + secret_of(holder.credential) + "'";
    auto expect = [&](const std::vector<std::string>& resources, const std::string& every,
                      const std::string& who) {
      return "'', " + server::array_of(resources) + ", " + every + ", " + who + ", 'me'";
    };
    CHECK(yes(value_of(env, "expect_runs", expect({"e.a", "e.b"}, "60000", owner + secret))));
    const json declared = expected_run(env, "e.a");
    REQUIRE(declared.is_object());
    CHECK(declared["every_ms"] == 60000);
    CHECK(expected_run(env, "e.b")["every_ms"] == 60000);
    value_of(env, "expect_runs", expect({"e.a"}, "60000", owner + secret));
    CHECK(expected_run(env, "e.a")["declared_at"] == declared["declared_at"]);
    value_of(env, "expect_runs", expect({"e.a"}, "120000", owner + secret));
    CHECK(expected_run(env, "e.a")["every_ms"] == 120000);
    CHECK(expected_run(env, "e.a")["declared_at"] == declared["declared_at"]);

    // The holder's id with a guessed secret: refused, recorded with who asked.
    CHECK_FALSE(yes(value_of(
        env, "expect_runs",
        "'', " + server::array_of({"e.a"}) + ", 315360000000, " + owner + "'guess', 'intruder'")));
    CHECK(events_counted(env, "refused", "intruder") == 1);
    CHECK(expected_run(env, "e.a")["every_ms"] == 120000);
    // An owner that holds nothing there, and the holder naming one it does not hold.
    CHECK_FALSE(yes(value_of(env, "expect_runs",
                             expect({"e.c"}, "60000", "'" + id_of(random_owner()) + "', ''"))));
    CHECK(expected_run(env, "e.c").is_null());
    CHECK_FALSE(yes(value_of(env, "expect_runs", expect({"e.a", "e.c"}, "1000", owner + secret))));
    CHECK(expected_run(env, "e.a")["every_ms"] == 120000);

    Result zero =
        server::sql(env, server::call(env, "expect_runs", expect({"e.a"}, "0", owner + secret)));
    INFO(zero.describe());
    CHECK(zero.status != 0);
    CHECK(zero.err.find("period") != std::string::npos);
  }

  TEST_CASE(
      "gc_batch removes at most a batch of expired leases, oldest first, each recorded expired; "
      "history only past its cut-off; a dry run counts all and removes nothing" *
      server::only_on_servers()) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"run", "-r", "g.old", "--", "true"}), 0);
    run_sql(env, {.postgres = "UPDATE clock.history SET at = now() - interval '2 hours' "
                              "WHERE resource = 'g.old'",
                  .mariadb = "UPDATE history SET at_us = clock_now_us() - 7200000000 "
                             "WHERE resource = 'g.old'"});
    const std::size_t old_rows = history_of(env, "g.old").size();
    REQUIRE(old_rows > 0);
    for (const char* resource : {"g.1", "g.2", "g.3", "g.live"})
      env.acquire({"-r", resource, "--ttl", "1h"});
    leave_dead_waiter(env, "g.live", random_owner());
    leave_dead_waiter(env, "g.live", random_owner());
    expire(env, "g.1", 3);
    expire(env, "g.2", 2);
    expire(env, "g.3", 1);
    run_sql(env, {.postgres = "UPDATE clock.waiters SET expires_at = now() - interval '1 s' "
                              "WHERE position = (SELECT min(position) FROM clock.waiters)",
                  .mariadb = "UPDATE waiters SET expires_us = clock_now_us() - 1000000 "
                             "ORDER BY position LIMIT 1"});
    auto expired_left = [&] {
      std::vector<std::string> left;
      const json status = env.status({"--all"});
      for (const auto& holder : status["holders"]) {
        if (holder["expired"] == true)
          left.push_back(holder["resource"]);
      }
      return left;
    };
    REQUIRE(expired_left() == std::vector<std::string>{"g.1", "g.2", "g.3"});

    json dry = gc_batch(env, "2", "NULL", true);
    CHECK(counts_of(dry) == "3 1 0");
    CHECK(expired_left().size() == 3);

    json batch = gc_batch(env, "2", "NULL", false);
    CHECK(counts_of(batch) == "2 1 0");
    CHECK(expired_left() == std::vector<std::string>{"g.3"});
    CHECK(events_counted(env, "expired", "") == 2);
    CHECK(env.status()["waiters"].size() == 1);
    CHECK(history_of(env, "g.old").size() == old_rows);

    json pruned = gc_batch(env, "100", "3600000", false);
    CHECK(pruned["expired_leases"] == 1);
    CHECK(pruned["history_rows"] == old_rows);
    CHECK(history_of(env, "g.old").empty());
    CHECK(env.holders_of("g.live").size() == 1);
    CHECK(history_of(env, "g.1").size() == 2);  // acquired, expired: newer than the cut-off
  }

  TEST_CASE("release, renew and force_release refuse bad input and change nothing" *
            server::only_on_servers()) {
    TestEnv env;
    Acquired held = env.acquire({"-r", "a", "--ttl", "1h"});
    const json before = only_holder(env, "a");
    const std::string owner = "'" + held.owner + "'";
    const std::string secret = "'" + secret_of(held.credential) + "'";
    struct Bad {
      std::string what;
      server::Dialects call;
      std::string says;
    };
    const std::vector<Bad> calls = {
        {"an invalid name",
         server::call(env, "renew",
                      "'', " + server::array_of({"a..b"}) + ", " + owner + ", " +
                          server::array_of({}) + ", 5000, " + secret + ", 'x'"),
         "invalid resource name 'a..b'"},
        {"a resource named twice",
         server::call(env, "release",
                      "'', " + server::array_of({"a", "a"}) + ", " + owner + ", " + secret +
                          ", 'x', 'h', " + server::array_of({}) + ", false"),
         "named twice"},
        {"resources that are not an array", server::call(env, "force_release", "'', 'a', 'x'"), ""},
        {"an owner that is not a UUID",
         server::call(env, "release",
                      "'', " + server::array_of({"a"}) + ", 'not-a-uuid', " + secret +
                          ", 'x', 'h', " + server::array_of({}) + ", false"),
         ""},
        {"a namespace over 255 bytes",
         server::call(env, "force_release",
                      "repeat('n', 256), " + server::array_of({"a"}) + ", 'x'"),
         "namespace"},
    };
    for (const auto& bad : calls) {
      CAPTURE(bad.what);
      Result refused = server::sql(env, bad.call);
      INFO(refused.describe());
      CHECK(refused.status != 0);
      CHECK(refused.err.find(bad.says) != std::string::npos);
    }
    const json after = only_holder(env, "a");
    CHECK(after["expires_at"] == before["expires_at"]);
    CHECK(history_of(env, "a").size() == 1);
  }

  // The server takes a call's slot rows in its own order, whatever the
  // caller's (clock sorts its resources; another caller need not).
  TEST_CASE(
      "force releases naming four hierarchies in opposite orders, beside each client's "
      "renewals, end without a server deadlock or lock timeout, every renewal a renewal" *
      server::only_on_servers() * doctest::timeout(300)) {
    TestEnv env;
    const std::vector<std::vector<std::string>> orders = {{"c1.x", "c2.x", "c3.x", "c4.x"},
                                                          {"c4.x", "c3.x", "c2.x", "c1.x"},
                                                          {"c2.x", "c4.x", "c1.x", "c3.x"},
                                                          {"c3.x", "c1.x", "c4.x", "c2.x"}};
    constexpr int k_rounds = 100;
    std::vector<Command> commands;
    for (std::size_t i = 0; i < orders.size(); ++i) {
      const std::string own = "c" + std::to_string(i + 1) + ".own";
      Acquired holder = env.acquire({"-r", own, "--ttl", "1h"});
      std::vector<server::Dialects> statements;
      for (int round = 0; round < k_rounds; ++round) {
        statements.push_back(server::call(
            env, "force_release", "'', " + server::array_of(orders[i]) + ", 'client " + own + "'"));
        statements.push_back(server::call(env, "renew",
                                          "'', " + server::array_of({own}) + ", '" + holder.owner +
                                              "', " + server::array_of({}) + ", 60000, '" +
                                              secret_of(holder.credential) + "', 'x'"));
      }
      commands.push_back(client_of(env, statements));
    }
    // Started together, once every lease is there, so that their calls overlap.
    std::vector<std::unique_ptr<Process>> clients;
    for (const auto& command : commands)
      clients.push_back(env.spawn(command));
    for (auto& client : clients) {
      Result result = client->wait(240s);
      INFO(result.describe());
      CHECK(result.status == 0);
      CHECK(result.err.empty());
      CHECK(occurrences(result.out, "\"renewed\"") == k_rounds);
    }
  }
}
