// clock status, history and gc (man clock, COMMANDS): what an operator sees about holders,
// and that collecting expired leases never resets fencing tokens.
#include <pwd.h>
#include <set>
#include <string>
#include <unistd.h>

#include <doctest/doctest.h>

#include "harness.hpp"
#include "mariadb_tools.hpp"

using namespace clk::test;

namespace {

std::string user_name() {
  passwd* entry = getpwuid(getuid());
  return entry ? entry->pw_name : "";
}

}  // namespace

TEST_SUITE("status and gc") {
  TEST_CASE("status --format json lists host, pid, token and expiry for a held lock") {
    TestEnv env;
    Result acquired = env.clock({"acquire", "--format", "json", "-r", "x", "--ttl", "60s"});
    REQUIRE_EXIT(acquired, 0);
    Acquired grant = parse_acquired(acquired.out);

    nlohmann::json status = env.status();
    INFO(status.dump(2));
    REQUIRE(status.contains("waiters"));
    CHECK(status["waiters"].is_array());
    CHECK(status["waiters"].empty());
    REQUIRE(status["holders"].size() == 1);
    const nlohmann::json& holder = status["holders"][0];
    CHECK(holder["resource"] == "x");
    CHECK(holder["namespace"] == "");
    CHECK(holder["owner"] == grant.owner);
    CHECK(holder["host"] == host_name());
    CHECK(holder["ip"].is_string());
    // The pid of `clock acquire` itself, or of the process that ran it.
    long long pid = holder["pid"].get<long long>();
    CHECK((pid == acquired.pid || pid == getpid()));
    CHECK(holder["user"] == user_name());
    CHECK(holder["command"].is_string());
    CHECK(holder["mode"] == "exclusive");
    CHECK(holder["token"] == grant.token());
    CHECK_FALSE(holder["acquired_at"].get<std::string>().empty());
    CHECK_FALSE(holder["expires_at"].get<std::string>().empty());
    CHECK(holder["held_for_ms"].get<long long>() >= 0);
    long long expires_in = holder["expires_in_ms"].get<long long>();
    CHECK(expires_in > 0);
    CHECK(expires_in <= 60'000);
  }

  TEST_CASE("status lists a waiter behind a holder") {
    TestEnv env;
    env.acquire({"-r", "x"});
    std::string waiter_owner = random_owner();
    auto waiter = env.spawn(env.clock_command({"acquire", "-r", "x", "--owner", waiter_owner}));
    nlohmann::json status;
    REQUIRE(await(
        [&] {
          status = env.status();
          return !status["waiters"].empty();
        },
        30s));
    INFO(status.dump(2));
    CHECK(status["waiters"][0]["resource"] == "x");
    CHECK(status["waiters"][0]["owner"] == id_of(waiter_owner));
  }

  TEST_CASE("status PREFIX lists the resource and its descendants only") {
    TestEnv env;
    env.acquire({"-r", "foo.bar"});
    env.acquire({"-r", "foobar"});
    env.acquire({"-r", "other"});
    nlohmann::json status = env.status({"foo"});
    INFO(status.dump(2));
    REQUIRE(status["holders"].size() == 1);
    CHECK(status["holders"][0]["resource"] == "foo.bar");
  }

  TEST_CASE("status in table and prometheus formats succeeds and names the holder") {
    TestEnv env;
    env.acquire({"-r", "ldap.import"});
    Result table = env.clock({"status"});
    CHECK_EXIT(table, 0);
    CHECK(table.out.find("ldap.import") != std::string::npos);
    CHECK(table.out.find(host_name()) != std::string::npos);
    Result prometheus = env.clock({"status", "--format", "prometheus"});
    CHECK_EXIT(prometheus, 0);
    CHECK(prometheus.out.find("ldap.import") != std::string::npos);
  }

  TEST_CASE("the status table has one line per holder and per waiter, waiters in queue order") {
    TestEnv env;
    Acquired a = env.acquire({"-r", "a"});
    Acquired x = env.acquire({"-r", "x"});
    std::vector<std::string> waiter_owners = {random_owner(), random_owner()};
    std::vector<std::unique_ptr<Process>> waiters;
    for (std::size_t i = 0; i < waiter_owners.size(); ++i) {
      waiters.push_back(
          env.spawn(env.clock_command({"acquire", "-r", "x", "--owner", waiter_owners[i]})));
      REQUIRE(await([&] { return env.status()["waiters"].size() == i + 1; }, 30s));
    }
    nlohmann::json status = env.status();
    std::string ip = status["holders"][0]["ip"];

    // TERM is set, but stdout is a file: no colour.
    Result table = env.clock({"status"}, {{"TERM", "xterm-256color"}});
    CHECK_EXIT(table, 0);
    INFO(table.out);
    CHECK(table.out.find('\x1b') == std::string::npos);
    std::vector<std::string> lines;
    for (std::size_t start = 0, end; start < table.out.size(); start = end + 1) {
      end = table.out.find('\n', start);
      lines.push_back(table.out.substr(start, end - start));
    }
    REQUIRE(lines.size() == 6);  // database, header, a, x held, x waiting #1, x waiting #2
    CHECK(lines[0] == "database: " + env.url());
    lines.erase(lines.begin());
    for (const char* column : {"RESOURCE", "STATE", "OWNER", "HOST", "IP", "PID", "TOKEN", "FOR"})
      CHECK(lines[0].find(column) != std::string::npos);
    auto row_has = [&](std::size_t row, const std::string& resource, const std::string& state,
                       const std::string& owner) {
      INFO("row " << row << ": " << lines[row]);
      CHECK(lines[row].rfind(resource + " ", 0) == 0);
      CHECK(lines[row].find("  " + state + "  ") != std::string::npos);
      CHECK(lines[row].find(owner) != std::string::npos);
      CHECK(lines[row].find(host_name()) != std::string::npos);
      CHECK(lines[row].find(ip.empty() ? std::string(" - ") : ip) != std::string::npos);
    };
    row_has(1, "a", "held", a.owner);
    row_has(2, "x", "held", x.owner);
    row_has(3, "x", "waiting #1", id_of(waiter_owners[0]));
    row_has(4, "x", "waiting #2", id_of(waiter_owners[1]));
    // Columns line up: STATE starts at the same offset on every line.
    auto state_at = lines[0].find("STATE");
    for (std::size_t row = 1; row < lines.size(); ++row)
      CHECK(lines[row].find_first_not_of(' ', state_at) == state_at);
  }

  TEST_CASE("status exits 0 when a live lease is held, 1 when none is") {
    TestEnv env;
    Result empty = env.clock({"status"});
    CHECK_EXIT(empty, 1);
    CHECK(empty.out == "database: " + env.url() + "\nno locks held\n");
    CHECK(empty.err.empty());
    CHECK_EXIT(env.clock({"status", "--format", "json"}), 1);
    CHECK_EXIT(env.clock({"status", "--format", "prometheus"}), 0);  // an exporter

    Acquired held = env.acquire({"-r", "ldap.import"});
    CHECK_EXIT(env.clock({"status"}), 0);
    CHECK_EXIT(env.clock({"status", "ldap"}), 0);  // a prefix of what is held
    CHECK_EXIT(env.clock({"status", "ldap.import", "--format", "json"}), 0);
    CHECK_EXIT(env.clock({"status", "bootstrap"}), 1);  // something else is held
    CHECK_EXIT(env.clock({"status", "ldap.export"}), 1);
    CHECK_EXIT(env.clock({"status", "a..b"}), 64);  // errors keep their codes

    // A lapsed lease not yet collected is not held, even where --all shows it.
    env.acquire({"-r", "job", "--ttl", "1s"});
    REQUIRE(await([&] { return env.holders_of("job").empty(); }, 30s, 100ms));
    CHECK_EXIT(env.clock({"status", "job"}), 1);
    Result expired = env.clock({"status", "job", "--all"});
    CHECK_EXIT(expired, 1);
    CHECK(expired.out.find("expired") != std::string::npos);

    CHECK_EXIT(env.clock({"release", "-r", "ldap.import", "--owner", held.credential}), 0);
    CHECK_EXIT(env.clock({"status", "ldap"}), 1);
  }

  // Before --ttl had a cap a lease could be stored expiring past year 2262,
  // the last instant a nanosecond clock holds (and on PostgreSQL past 9999,
  // whose text has a longer year): every reader still reads it, as held.
  TEST_CASE("a lease stored with an expiry past year 9999 is read as held by every reader") {
    TestEnv env;
    env.acquire({"-r", "far.future", "--ttl", "60s"});
    if (backend_name() == "mariadb") {
      REQUIRE_EXIT(maria::sql(env,
                              "UPDATE leases SET expires_us = 317000000000000000 "
                              "WHERE resource = 'far.future'"),  // year 12015, in µs
                   0);
    } else {
      const std::string forge =
          backend_name() == "sqlite"
              ? "sqlite3 \"${CLOCK_DATABASE_URL#sqlite:}\" \"UPDATE leases SET expires_at = "
                "317000000000000 WHERE resource = 'far.future'\""  // year 12015, in ms
              : "psql -X -q -v ON_ERROR_STOP=1 -d \"$CLOCK_DATABASE_URL\" -c \"UPDATE "
                "clock.leases SET expires_at = '12000-01-01 00:00:00+00' WHERE resource = "
                "'far.future'\"";
      REQUIRE_EXIT(env.shell(forge), 0);
    }

    Result table = env.clock({"status"});
    CHECK_EXIT(table, 0);
    CHECK(table.out.find("far.future") != std::string::npos);
    auto holders = env.holders_of("far.future");  // status --format json
    REQUIRE(holders.size() == 1);
    CHECK(holders[0].value("expires_at", "").rfind("2262-", 0) == 0);
    CHECK_EXIT(env.clock({"status", "--format", "prometheus"}), 0);
    CHECK_EXIT(env.clock({"status", "--all"}), 0);
    CHECK_EXIT(env.clock({"history"}), 0);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "far.future"}), 75);
  }

  TEST_CASE("gc removes expired leases but tokens keep growing") {
    TestEnv env;
    Acquired expiring = env.acquire({"-r", "x", "--ttl", "1s"});
    env.acquire({"-r", "y", "--ttl", "1h"});
    REQUIRE(await([&] { return env.holders_of("x").empty(); }, 30s, 100ms));
    CHECK(env.holders_of("x", true).size() == 1);  // expired, not yet collected

    CHECK_EXIT(env.clock({"gc", "--dry-run"}), 0);
    CHECK(env.holders_of("x", true).size() == 1);

    Result collected = env.clock({"gc"});
    CHECK_EXIT(collected, 0);
    CHECK(env.holders_of("x", true).empty());
    CHECK(env.holders_of("y").size() == 1);  // a live lease survives gc

    Acquired next = env.acquire({"-n", "-r", "x"});
    CHECK(next.token() > expiring.token());
  }

  TEST_CASE(
      "clock_runs_total counts runs by outcome; pruning history keeps the counts of "
      "resources in use and drops those of resources nobody uses, but keeps how each "
      "resource's runs ended") {
    TestEnv env;
    // The lock's outcomes, which gc prunes with history, apart from how
    // clock run's commands ended (succeeded, failed: one row a resource,
    // kept).
    auto split = [](const std::map<std::string, long long>& all, bool endings) {
      std::map<std::string, long long> part;
      for (const auto& [key, count] : all) {
        bool ending = key.ends_with("/succeeded") || key.ends_with("/failed");
        if (ending == endings)
          part.emplace(key, count);
      }
      return part;
    };
    env.acquire({"-r", "x"});  // held from here on
    env.acquire({"-r", "f"});
    CHECK_EXIT(env.clock({"release", "-r", "f", "--force"}), 0);
    CHECK_EXIT(env.clock({"run", "-n", "-E", "0", "-r", "x", "--", "true"}), 0);
    CHECK_EXIT(env.clock({"run", "-w", "200ms", "-r", "x", "--", "true"}), 75);
    CHECK_EXIT(env.clock({"run", "--max-runtime", "200ms", "-r", "k", "--", "sleep", "30"}), 124);
    Acquired lapsing = env.acquire({"-r", "d", "--ttl", "1s"});
    REQUIRE(await([&] { return env.holders_of("d").empty(); }, 30s, 100ms));
    CHECK_EXIT(env.clock({"renew", "-r", "d", "--owner", lapsing.credential}), 77);
    CHECK_EXIT(env.clock({"run", "--namespace", "dc-eu1", "-r", "x", "--", "true"}), 0);

    const std::map<std::string, long long> expected = {
        {"/x/acquired", 1}, {"/x/skipped", 1},       {"/x/timed_out", 1}, {"/f/acquired", 1},
        {"/f/forced", 1},   {"/k/acquired", 1},      {"/k/killed", 1},    {"/d/acquired", 1},
        {"/d/lost", 1},     {"dc-eu1/x/acquired", 1}};
    Result before = env.clock({"status", "--format", "prometheus"});
    REQUIRE_EXIT(before, 0);
    INFO("before gc:\n" << before.out);
    CHECK(split(runs_total(before.out), false) == expected);
    const std::map<std::string, long long> endings = {
        {"/k/succeeded", 0}, {"/k/failed", 1}, {"dc-eu1/x/succeeded", 1}, {"dc-eu1/x/failed", 0}};
    CHECK(split(runs_total(before.out), true) == endings);

    // A dry run counts the idle resources' counters (f, k, d, dc-eu1/x: 7
    // rows) and removes nothing.
    Result dry = env.clock({"gc", "--dry-run", "--history-older-than", "0s"});
    REQUIRE_EXIT(dry, 0);
    CHECK(dry.out.find(", 7 idle run counter(s)") != std::string::npos);
    Result pruned = env.clock({"gc", "--history-older-than", "0s"});
    REQUIRE_EXIT(pruned, 0);
    CHECK(pruned.out.find(", 7 idle run counter(s)") != std::string::npos);
    Result history = env.clock({"history", "--format", "json"});
    REQUIRE_EXIT(history, 0);
    CHECK(nlohmann::json::parse(history.out)["events"].empty());
    Result after = env.clock({"status", "--format", "prometheus"});
    REQUIRE_EXIT(after, 0);
    INFO("after gc:\n" << after.out);
    CHECK(split(runs_total(after.out), false) ==
          std::map<std::string, long long>{
              {"/x/acquired", 1}, {"/x/skipped", 1}, {"/x/timed_out", 1}});
    CHECK(split(runs_total(after.out), true) == endings);

    // Counting goes on from there; status filters the counts as it filters holders.
    CHECK_EXIT(env.clock({"run", "-r", "k", "--", "true"}), 0);
    Result k = env.clock({"status", "k", "--format", "prometheus"});
    REQUIRE_EXIT(k, 0);
    CHECK(split(runs_total(k.out), false) == std::map<std::string, long long>{{"/k/acquired", 1}});
    CHECK(split(runs_total(k.out), true) ==
          std::map<std::string, long long>{{"/k/succeeded", 1}, {"/k/failed", 1}});
    CHECK_EXIT(env.clock({"run", "--namespace", "dc-eu1", "-r", "x", "--", "true"}), 0);
    Result eu = env.clock({"status", "--namespace", "dc-eu1", "--format", "prometheus"});
    REQUIRE_EXIT(eu, 0);
    CHECK(split(runs_total(eu.out), false) ==
          std::map<std::string, long long>{{"dc-eu1/x/acquired", 1}});
    CHECK(split(runs_total(eu.out), true) ==
          std::map<std::string, long long>{{"dc-eu1/x/succeeded", 2}, {"dc-eu1/x/failed", 0}});
  }

  TEST_CASE("history records grants and releases") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "x"});
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", holder.credential}), 0);
    Result history = env.clock({"history", "x"});
    CHECK_EXIT(history, 0);
    CHECK(history.out.find("acquired") != std::string::npos);
    CHECK(history.out.find("released") != std::string::npos);

    Result json = env.clock({"history", "x", "--format", "json"});
    CHECK_EXIT(json, 0);
    CHECK(nlohmann::json::accept(json.out));
    CHECK(json.out.find(holder.owner) != std::string::npos);
  }

  TEST_CASE(
      "history --limit N is the newest N; PREFIX is its tree, not a name that starts alike; "
      "--namespace one namespace") {
    TestEnv env;
    for (const char* resource : {"q.a", "q.a.b", "qa"})
      REQUIRE_EXIT(env.clock({"run", "-r", resource, "--", "true"}), 0);
    REQUIRE_EXIT(env.clock({"--namespace", "other", "run", "-r", "q.a", "--", "true"}), 0);
    auto events = [&](const std::vector<std::string>& args) {
      std::vector<std::string> full = {"history", "--format", "json"};
      full.insert(full.end(), args.begin(), args.end());
      Result history = env.clock(full);
      INFO(history.describe());
      REQUIRE(history.status == 0);
      return nlohmann::json::parse(history.out)["events"];
    };
    const auto all = events({});
    REQUIRE(all.size() == 8);  // acquired and released, four times
    for (std::size_t i = 1; i < all.size(); ++i)
      CHECK(all[i - 1]["id"].get<long long>() > all[i]["id"].get<long long>());
    const auto newest = events({"--limit", "3"});
    REQUIRE(newest.size() == 3);
    for (std::size_t i = 0; i < 3; ++i)
      CHECK(newest[i]["id"] == all[i]["id"]);

    std::set<std::string> tree;
    for (const auto& event : events({"q"}))
      tree.insert(event["namespace"].get<std::string>() + "/" +
                  event["resource"].get<std::string>());
    CHECK(tree == std::set<std::string>{"/q.a", "/q.a.b", "other/q.a"});  // not qa
    const auto other = events({"--namespace", "other"});
    CHECK(other.size() == 2);
    for (const auto& event : other)
      CHECK(event["namespace"] == "other");
  }

  TEST_CASE("clock init creates the schema and --print-sql prints the DDL") {
    TestEnv env;
    CHECK_EXIT(env.clock({"init"}), 0);
    CHECK_EXIT(env.clock({"init"}), 0);  // a second run has nothing to migrate
    Result sql = env.clock({"init", "--print-sql"});
    CHECK_EXIT(sql, 0);
    CHECK(sql.out.find("CREATE") != std::string::npos);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x"}), 0);
  }
}
