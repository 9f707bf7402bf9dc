// Least privilege (sql/postgres/roles.sql, sql/mariadb/roles.sql): a login
// granted clock_app can acquire, renew, release its own locks, run, and read
// status and history, but cannot force a release or collect garbage; one
// granted clock_operator can also release --force and gc: on both servers,
// through clock itself (ServerRoles). On both servers also, in each server's
// own SQL: no role can change or drop the schema, or read or write the lock
// tables and history behind the routines' back, and clock_reader can only
// read; the bounds of a call (docs/threat-model.md) and roles.sql without
// release 1.0's routines, through raw calls as those logins. Each test logs
// in as fresh roles.
#include <csignal>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <string>
#include <unistd.h>
#include <vector>

#include <doctest/doctest.h>

#include "harness.hpp"
#include "mariadb_tools.hpp"
#include "owner_secret_scenario.hpp"
#include "postgres_tools.hpp"
#include "server_tools.hpp"

using namespace clk::test;
using nlohmann::json;
using pg::psql;

namespace {

// The test's database with a clock schema and the roles of roles.sql, and two
// login roles (dropped again at the end): one in clock_app, one in
// clock_operator. Roles are per server, so their names are per test.
class Roles {
 public:
  explicit Roles(const TestEnv& env, const std::vector<std::string>& psql_variables = {})
      : m_env(env) {
    std::random_device random;
    std::string suffix = std::to_string(random() % 1'000'000'000);
    m_app = "clock_test_app_" + suffix;
    m_operator = "clock_test_op_" + suffix;
    pg::install_roles(env, psql_variables);
    REQUIRE_EXIT(psql(env, env.url(),
                      "CREATE ROLE " + m_app + " LOGIN IN ROLE clock_app; CREATE ROLE " +
                          m_operator + " LOGIN IN ROLE clock_operator"),
                 0);
  }
  ~Roles() { psql(m_env, m_env.url(), "DROP ROLE IF EXISTS " + m_app + ", " + m_operator); }
  Roles(const Roles&) = delete;
  Roles& operator=(const Roles&) = delete;

  std::string app_url() const { return m_env.url() + " user=" + m_app; }
  const std::string& app_name() const { return m_app; }
  std::string operator_url() const { return m_env.url() + " user=" + m_operator; }
  std::map<std::string, std::string> as_app() const { return {{"CLOCK_DATABASE_URL", app_url()}}; }
  std::map<std::string, std::string> as_operator() const {
    return {{"CLOCK_DATABASE_URL", operator_url()}};
  }

 private:
  const TestEnv& m_env;
  std::string m_app, m_operator;
};

// An app login and an operator login on either server (server_tools.hpp),
// for what a login may do through clock itself.
class ServerRoles {
 public:
  explicit ServerRoles(const TestEnv& env)
      : m_app(env, 0, "clock_app"), m_operator(env, 0, "clock_operator") {}
  const std::string& app_name() const { return m_app.name(); }
  const std::string& operator_name() const { return m_operator.name(); }
  std::map<std::string, std::string> as_app() const { return m_app.env(); }
  std::map<std::string, std::string> as_operator() const { return m_operator.env(); }
  const server::AppLogin& app() const { return m_app; }
  const server::AppLogin& operator_login() const { return m_operator; }

 private:
  server::AppLogin m_app, m_operator;
};

Acquired acquire_as(const TestEnv& env, const std::map<std::string, std::string>& role,
                    const std::vector<std::string>& args) {
  std::vector<std::string> full = {"acquire", "--format", "shell"};
  full.insert(full.end(), args.begin(), args.end());
  Result result = env.clock(full, role);
  INFO(result.describe());
  REQUIRE(result.status == 0);
  return parse_acquired_shell(result.out);
}

// Statements that would rewrite history or run counts, forge or drop leases, or
// change the schema, each refused for a role that may only call the functions.
const std::vector<std::string> k_forbidden_sql = {
    "DELETE FROM clock.history",
    "UPDATE clock.history SET event = 'released'",
    "TRUNCATE clock.history",
    "DELETE FROM clock.leases",
    "UPDATE clock.leases SET expires_at = now()",
    "INSERT INTO clock.history (at, event, namespace, resource, owner, token) "
    "VALUES (now(), 'released', '', 'x', gen_random_uuid(), 1)",
    "UPDATE clock.run_counts SET count = 0",
    "DELETE FROM clock.run_counts",
    "UPDATE clock.last_success SET started_at = now() - interval '1 year'",
    "SELECT nextval('clock.tokens')",
    "SELECT setval('clock.tokens', 1)",
    "DROP TABLE clock.leases",
    "ALTER TABLE clock.history DROP COLUMN owner",
    "CREATE TABLE clock.evil (x int)",
    "DROP SCHEMA clock CASCADE",
    "CREATE OR REPLACE FUNCTION clock.release(text, text[], uuid, text, text, text, bigint[], "
    "boolean) RETURNS jsonb LANGUAGE sql AS 'SELECT ''{}''::jsonb'",
    "DROP FUNCTION clock.release(text, text[], uuid, text, text, text, bigint[], boolean)",
    "SELECT secret_hash FROM clock.leases",
    "DELETE FROM clock.schema_migrations",
    "SELECT clock.record_event('released', now(), l, NULL) FROM clock.leases l",
};

// The same statements on MariaDB (tables in the test's database, procedures
// named with this release's suffix `s`): tables only the definer's routines
// may touch, and the helpers only they may call.
std::vector<std::string> forbidden_mariadb_sql(const std::string& s) {
  return {
      "DELETE FROM history",
      "UPDATE history SET event = 'released'",
      "INSERT INTO history (at_us, event, namespace, resource, owner) "
      "VALUES (1, 'released', '', 'x', UUID())",
      "SELECT * FROM leases",
      "SELECT secret_hash FROM leases",
      "UPDATE leases SET expires_us = NULL",
      "DELETE FROM leases",
      "UPDATE hierarchy_locks SET writes = writes + 1 WHERE slot = 0",
      "UPDATE run_counts SET count = 0",
      "UPDATE tokens SET last = 1",
      "DELETE FROM schema_migrations",
      "DROP TABLE leases",
      "ALTER TABLE history DROP COLUMN owner",
      "CREATE TABLE evil (x INT)",
      "CREATE PROCEDURE evil() SELECT 1",
      "DROP PROCEDURE clock_release" + s,
      "CALL clock_acq_dequeue" + s + "('', '[\"kept\"]', UUID())",
      "CALL clock_rec_lock_hierarchies" + s + "('', '[\"kept\"]')",
  };
}

// This release's routine set: its PostgreSQL schema, or the suffix of its
// MariaDB procedures.
std::string routine_set(const TestEnv& env) {
  Result set = backend_name() == "postgres"
                   ? psql(env, "SELECT name FROM clock.routine_sets WHERE name <> 'clock'")
                   : maria::sql(env, "SELECT suffix FROM routine_sets WHERE suffix <> ''");
  INFO(set.describe());
  REQUIRE(set.status == 0);
  std::string name = set.out.substr(0, set.out.find('\n'));
  REQUIRE_FALSE(name.empty());
  return name;
}

std::vector<std::string> forbidden_sql(const TestEnv& env) {
  if (backend_name() == "postgres")
    return k_forbidden_sql;
  return forbidden_mariadb_sql(routine_set(env));
}

// What only clock_app may call: take, renew, note leftovers on and release
// `owner`'s lock "kept" (or take another).
std::vector<std::string> calls_beyond_a_reader(const TestEnv& env, const std::string& owner) {
  const std::string set = routine_set(env);
  if (backend_name() == "postgres") {
    const std::string f = "SELECT " + set + ".";
    return {f + "try_acquire('', '{other}', 'exclusive', 0, gen_random_uuid(), 60000, 'r', "
                "false, 'h', '', 1, 'u', 'c', NULL, false, '', 'x')",
            f + "renew('', '{kept}', '" + owner + "', '{}', 60000, '', 'x')",
            f + "note_leftovers('', '{kept}', '" + owner + "', '{}', '[]', '', 'x')",
            f + "release('', '{kept}', '" + owner + "', '', 'x', 'h', '{}', false)"};
  }
  const std::string kept = "'', '[\"kept\"]', '" + owner + "'";
  return {"CALL clock_try_acquire" + set +
              "('', '[\"other\"]', 'exclusive', 0, UUID(), 60000, 'r', TRUE, 'h', '', 1, '', "
              "'', NULL, TRUE, '', '', NULL, NULL, 0)",
          "CALL clock_renew" + set + "(" + kept + ", '[]', 60000, '', 'x')",
          "CALL clock_note_leftovers" + set + "(" + kept + ", '[]', '[]', '', 'x')",
          "CALL clock_release" + set + "(" + kept + ", '', 'x', 'h', '[]', FALSE)"};
}

long long history_rows(const TestEnv& env) {
  Result count = backend_name() == "postgres" ? psql(env, "SELECT count(*) FROM clock.history")
                                              : maria::sql(env, "SELECT COUNT(*) FROM history");
  INFO(count.describe());
  REQUIRE(count.status == 0);
  return std::stoll(count.out);
}

// `sql` as `login` fails for want of a privilege (PostgreSQL: permission
// denied, must be owner; MariaDB: 1044, 1142, 1370 "… denied").
void check_refused_to(const server::AppLogin& login, const std::string& sql) {
  CAPTURE(sql);
  Result result = login.sql({.postgres = sql, .mariadb = sql});
  CHECK(result.status != 0);
  INFO(result.err);
  CHECK(std::regex_search(result.err, std::regex("permission denied|must be owner|ERROR "
                                                 "(1044|1142|1370) .*denied")));
}

void check_refused_by_role(const TestEnv& env, const std::string& url, const std::string& sql) {
  CAPTURE(sql);
  Result result = psql(env, url, sql);
  CHECK(result.status != 0);
  bool denied = result.err.find("permission denied") != std::string::npos ||
                result.err.find("must be owner") != std::string::npos;
  INFO(result.err);
  CHECK(denied);
}

}  // namespace

TEST_SUITE("least privilege") {
  TEST_CASE("clock_app can acquire, renew, release its own, run, and read status and history" *
            server::only_on_servers()) {
    TestEnv env;
    ServerRoles roles(env);
    Acquired held = acquire_as(env, roles.as_app(), {"-n", "-r", "app.job", "--ttl", "1m"});
    CHECK_EXIT(env.clock({"renew", "-r", "app.job", "--owner", held.credential, "--ttl", "2m"},
                         roles.as_app()),
               0);
    Result status = env.clock({"status", "--format", "json"}, roles.as_app());
    CHECK_EXIT(status, 0);
    CHECK(status.out.find(held.owner) != std::string::npos);
    CHECK_EXIT(env.clock({"status"}, roles.as_app()), 0);
    Result metrics = env.clock({"status", "--format", "prometheus"}, roles.as_app());
    CHECK_EXIT(metrics, 0);
    CHECK(runs_total(metrics.out)["/app.job/acquired"] == 1);
    CHECK_EXIT(env.clock({"release", "-r", "app.job", "--owner", held.credential}, roles.as_app()),
               0);
    CHECK_EXIT(env.clock({"run", "-n", "-r", "app.job", "--", "true"}, roles.as_app()), 0);
    // Declaring an expected period (expect_runs) and reading it (expected_rows).
    Result every =
        env.clock({"run", "-r", "app.every", "--every", "1h", "--", "true"}, roles.as_app());
    CHECK_EXIT(every, 0);
    CHECK(every.err.empty());
    Result missed = env.clock({"missed", "app.every", "--format", "json"}, roles.as_app());
    CHECK_EXIT(missed, 0);
    CHECK(missed.out.find("\"app.every\"") != std::string::npos);
    Result history = env.clock({"history", "--format", "json"}, roles.as_app());
    CHECK_EXIT(history, 0);
    CHECK(history.out.find("released") != std::string::npos);
    // Waiting works too: queued behind another, granted when it leaves.
    Acquired other = env.acquire({"-r", "app.queue"});
    auto waiter =
        env.spawn(env.clock_command({"acquire", "-w", "60s", "-r", "app.queue"}, roles.as_app()));
    REQUIRE(await([&] { return !env.status().value("waiters", json::array()).empty(); }, 30s));
    CHECK_EXIT(env.clock({"release", "-r", "app.queue", "--owner", other.credential}), 0);
    CHECK_EXIT(waiter->wait(), 0);
  }

  // docs/upgrades.md: once no host runs v1.0.0, roles.sql run again with
  // without_release_1_0 takes release 1.0's routines, which have none of
  // this release's bounds, from the roles, and clock keeps working.
  TEST_CASE(
      "roles.sql with without_release_1_0 takes release 1.0's unbounded routines from "
      "clock_app and clock_reader, and clock runs, waits, reads and releases as before" *
      server::only_on_servers()) {
    TestEnv env;
    ServerRoles roles(env);
    // Release 1.0's acquire and status, unsuffixed, as v1.0.0 hosts call them.
    const server::Dialects old_acquire = {
        .postgres =
            "SELECT clock.try_acquire('', (SELECT array_agg('b.n' || g) FROM "
            "generate_series(1, 100) g), 'exclusive', 0, gen_random_uuid(), 60000, 'r', "
            "false, 'h', '', 1, 'u', 'c', NULL, false, '', 'x', 1)",
        .mariadb =
            "CALL clock_try_acquire('', '[\"b\"]', 'exclusive', 0, UUID(), 60000, 'r', "
            "false, 'h', '', 1, 'u', 'c', NULL, false, '', 'x', NULL, 0)"};
    const server::Dialects old_status = {
        .postgres = "SELECT * FROM clock.status_rows('', '', false)",
        .mariadb = "CALL clock_status_rows('', '', false)"};
    auto denied = [](const Result& result) {
      return result.status != 0 && (result.err.find("permission denied") != std::string::npos ||
                                    result.err.find("command denied") != std::string::npos);
    };
    {
      // During the upgrade: v1.0.0 hosts still call them.
      Result allowed = roles.app().sql(old_acquire);
      INFO(allowed.describe());
      CHECK_FALSE(denied(allowed));
    }
    server::retire_release_1_0(env);
    Result refused = roles.app().sql(old_acquire);
    INFO(refused.describe());
    CHECK(denied(refused));
    CHECK(refused.err.find("try_acquire") != std::string::npos);
    Result reader = roles.app().sql(old_status);
    INFO(reader.describe());
    CHECK(denied(reader));

    CHECK_EXIT(env.clock({"run", "-n", "-r", "app.job", "--", "true"}, roles.as_app()), 0);
    Acquired held = acquire_as(env, roles.as_app(), {"-r", "app.queue", "--ttl", "1m"});
    auto waiter = env.spawn(
        env.clock_command({"run", "-w", "60s", "-r", "app.queue", "--", "true"}, roles.as_app()));
    REQUIRE(await([&] { return !env.status().value("waiters", json::array()).empty(); }, 30s));
    CHECK_EXIT(env.clock({"renew", "-r", "app.queue", "--owner", held.credential}, roles.as_app()),
               0);
    CHECK_EXIT(
        env.clock({"release", "-r", "app.queue", "--owner", held.credential}, roles.as_app()), 0);
    CHECK_EXIT(waiter->wait(), 0);
    CHECK(env.holders_of("app.queue").empty());
    Result history = env.clock({"history", "--format", "json"}, roles.as_app());
    CHECK_EXIT(history, 0);
    CHECK(history.out.find("released") != std::string::npos);
  }

  TEST_CASE("clock_app cannot force a release, gc, or release another owner's lock" *
            server::only_on_servers()) {
    TestEnv env;
    ServerRoles roles(env);
    Acquired victim = env.acquire({"-r", "x", "--ttl", "1s"});
    Acquired mine = acquire_as(env, roles.as_app(), {"-r", "mine"});

    Result forced = env.clock({"release", "-r", "x", "--force"}, roles.as_app());
    CHECK_EXIT(forced, 78);
    CHECK(forced.err_lines().size() == 1);
    CHECK(forced.err.find("clock_operator") != std::string::npos);

    Result others = env.clock({"release", "-r", "x", "--owner", mine.credential}, roles.as_app());
    CHECK_EXIT(others, 77);

    REQUIRE(await([&] { return env.holders_of("x").empty(); }, 30s, 100ms));  // expired
    Result gc = env.clock({"gc"}, roles.as_app());
    CHECK_EXIT(gc, 78);
    CHECK(gc.err.find("clock_operator") != std::string::npos);
    CHECK(env.holders_of("x", true).size() == 1);  // not collected

    if (backend_name() == "postgres") {  // the calls themselves, behind the CLI's back
      for (const std::string& call :
           {std::string("SELECT clock.force_release('', ARRAY['mine'], 'app')"),
            std::string("SELECT clock.gc_batch(100, 0, false)")}) {
        check_refused_by_role(env, env.url() + " user=" + roles.app_name(), call);
      }
    }
    CHECK(env.holders_of("mine").size() == 1);
    CHECK(victim.token() > 0);
  }

  TEST_CASE(
      "clock_app on a second host, as another user, sees the holder in status and history "
      "but cannot renew, release or re-enter its lease (77, recorded); the holder exits 0" *
      doctest::skip(geteuid() != 0 || backend_name() != "postgres")) {
    TestEnv env;
    Roles roles(env);
    // The test server listens on a socket only, in a folder of its own: the
    // other user may reach the socket, as a host reaches the server.
    std::smatch socket;
    std::string url = env.url();
    REQUIRE(std::regex_search(url, socket, std::regex("host=(/[^ ]+)")));
    fs::permissions(socket[1].str(), fs::perms::others_exec, fs::perm_options::add);
    intruder_cannot_take_the_lease(env, roles.as_app(), Intruder{61003, "web2", roles.as_app()},
                                   78);
  }

  TEST_CASE(
      "clock_app cannot lengthen or declare the expected period of a job it does not hold: "
      "not with the holder's id from status, not without a lease, not by the old signature" *
      ::clk::test::only_on("postgres")) {
    TestEnv env;
    Roles roles(env);
    // A nightly job declares its period (1 h) while it holds the lock.
    auto job = env.spawn(env.clock_command(
        {"run", "-r", "nightly", "--every", "1h", "--", "sleep", "600"}, roles.as_app()));
    auto period = [&] {
      Result row = psql(env, env.url(),
                        "SELECT every_ms FROM clock.expected_runs WHERE resource = 'nightly'");
      return row.out;
    };
    REQUIRE(await([&] { return period() == "3600000\n"; }, 30s));
    const std::string holder = env.holders_of("nightly").at(0)["owner"].get<std::string>();
    const std::string wrong = "'0123456789abcdef0123456789abcdef'";
    const std::vector<std::string> calls = {
        // The holder's id, read from status, with a guessed secret: refused, recorded.
        "SELECT clock.expect_runs('', ARRAY['nightly'], 315360000000, '" + holder + "'::uuid, " +
            wrong + ", 'intruder')",
        // A fresh id holding nothing: a new owner, but no lease to prove.
        "SELECT clock.expect_runs('', ARRAY['nightly'], 315360000000, gen_random_uuid(), " + wrong +
            ", 'intruder')",
        "SELECT clock.expect_runs('', ARRAY['unheld'], 60000, gen_random_uuid(), '', 'intruder')",
    };
    for (const auto& call : calls) {
      CAPTURE(call);
      Result result = psql(env, roles.app_url(), call);
      INFO(result.describe());
      CHECK(result.status == 0);
      CHECK(result.out == "f\n");
    }
    // The signature without the owner's proof no longer exists.
    Result old = psql(env, roles.app_url(), "SELECT clock.expect_runs('', ARRAY['nightly'], 1)");
    CHECK(old.status != 0);
    CHECK(period() == "3600000\n");
    Result unheld =
        psql(env, env.url(), "SELECT count(*) FROM clock.expected_runs WHERE resource = 'unheld'");
    CHECK(unheld.out == "0\n");
    Result refused =
        psql(env, env.url(),
             "SELECT count(*) FROM clock.history WHERE event = 'refused' AND owner = '" + holder +
                 "' AND forced_by = 'intruder'");
    CHECK(refused.out == "1\n");
    job->signal(SIGTERM);
    CHECK_EXIT(job->wait(30s), 143);
  }

  TEST_CASE(
      "clock_app calling the functions directly cannot act in a waiter's name without its "
      "secret: no grant, no queue exit, no killed record" *
      ::clk::test::only_on("postgres")) {
    TestEnv env;
    Roles roles(env);
    Acquired holder = acquire_as(env, roles.as_app(), {"-r", "q"});
    const std::string waiter = random_owner();
    auto waiter_env = roles.as_app();
    waiter_env["CLOCK_OWNER"] = waiter;
    auto queued =
        env.spawn(env.clock_command({"run", "-w", "60s", "-r", "q", "--", "true"}, waiter_env));
    REQUIRE(await([&] { return !env.status()["waiters"].empty(); }, 30s));
    const std::string id = id_of(waiter);
    const std::string wrong = "'0123456789abcdef0123456789abcdef'";
    const std::vector<std::string> calls = {
        "SELECT clock.try_acquire('', ARRAY['q'], 'exclusive', 0, '" + id +
            "'::uuid, 60000, 'thief', false, 'h', '', 1, 'u', 'c', now(), false, " + wrong +
            ", 'thief')->>'outcome'",
        "SELECT clock.leave_queue('', ARRAY['q'], '" + id + "'::uuid, NULL, " + wrong + ")",
        "SELECT clock.record_missed_run('killed', '', ARRAY['q'], '" + id +
            "'::uuid, 'exclusive', 'h', '', 1, 'u', 'c', NULL, " + wrong + ")",
    };
    const std::vector<std::string> answers = {"not_proven", "0", "0"};
    for (std::size_t i = 0; i < calls.size(); ++i) {
      Result result = psql(env, roles.app_url(), calls[i]);
      CAPTURE(calls[i]);
      INFO(result.describe());
      CHECK(result.status == 0);
      CHECK(result.out == answers[i] + "\n");
    }
    // The genuine waiter is still queued, and runs once the holder is done;
    // nothing was recorded as killed in its name.
    CHECK(env.status()["waiters"].size() == 1);
    CHECK_EXIT(env.clock({"release", "-r", "q", "--owner", holder.credential}, roles.as_app()), 0);
    CHECK_EXIT(queued->wait(60s), 0);
    Result killed = psql(env, env.url(),
                         "SELECT count(*) FROM clock.history WHERE event = 'killed' "
                         "OR (event = 'acquired' AND owner = '" +
                             id + "' AND command = 'c')");
    CHECK(killed.out == "0\n");
    Result refused = psql(env, env.url(),
                          "SELECT count(*) FROM clock.history WHERE event = 'refused' AND owner "
                          "= '" +
                              id + "' AND db_user LIKE 'clock_test_app_%'");
    CHECK(refused.out == "3\n");
  }

  TEST_CASE(
      "a login without clock's privileges cannot stall a hierarchy: no lock of clock's is "
      "within its reach, a job renews and a forced release goes through" *
      ::clk::test::only_on("postgres")) {
    TestEnv env;
    Roles roles(env);
    const std::string stranger_role = "clock_test_stranger_" + std::to_string(::getpid());
    REQUIRE_EXIT(
        psql(env, env.url(),
             "DROP ROLE IF EXISTS " + stranger_role + "; CREATE ROLE " + stranger_role + " LOGIN"),
        0);
    const std::string stranger_url = env.url() + " user=" + stranger_role;
    {
      // What a stranger could take until schema 13: the advisory keys of a
      // hierarchy and of the deadlock search, computable by anyone, held for
      // its session. And what it cannot take now: the rows clock locks.
      pg::PsqlSession stranger(env, stranger_url);
      stranger.execute("SELECT pg_advisory_lock(hashtextextended(E'clock\\n\\nadv2', 0))");
      stranger.execute("SELECT pg_advisory_lock(hashtextextended(E'clock\\ndeadlock search', 0))");
      check_refused_by_role(env, stranger_url, "SELECT 1 FROM clock.hierarchy_locks FOR UPDATE");
      check_refused_by_role(env, stranger_url, "SELECT 1 FROM clock.hierarchy_locks FOR SHARE");

      // A job with a short lease renews through it and ends as its command does.
      auto job = env.spawn(env.clock_command(
          {"run", "--ttl", "3s", "-r", "adv2", "--", "sh", "-c", "sleep 5; exit 3"},
          roles.as_app()));
      REQUIRE(await([&] { return !env.holders_of("adv2").empty(); }, 30s));
      Result busy = env.clock({"acquire", "-n", "-r", "adv2.x"}, roles.as_app());
      CHECK_EXIT(busy, 75);
      Result job_result = job->wait(60s);
      CHECK_EXIT(job_result, 3);
      // An operator's forced release is not kept waiting either.
      Acquired held = acquire_as(env, roles.as_app(), {"-r", "adv2", "--ttl", "60s"});
      Result forced = env.clock({"release", "--force", "-r", "adv2"}, roles.as_operator());
      CHECK_EXIT(forced, 0);
      CHECK(env.holders_of("adv2").empty());
      CHECK(held.token() > 0);
      CHECK(stranger.finish() == 0);
    }
    psql(env, env.url(), "DROP ROLE IF EXISTS " + stranger_role);
  }

  // docs/threat-model.md, "Bounds of a call": an app login that keeps a
  // call's transaction open, and one that names 20,000 resources in one
  // call, beside a job renewing a 3 s lease of that hierarchy, a sibling's
  // run -n and an operator's forced release, all calling this release's
  // routines (its routine set). Without the bounds the open transaction held
  // the hierarchy's row for as long as the login liked: the job lost its
  // lease (79), the sibling waited its 2 s and was recorded as skipped (75)
  // and the forced release timed out (69); the long call held it for a
  // minute. A PostgreSQL function runs in its caller's transaction, which
  // then ends within 1 s; a MariaDB procedure commits its own, so it
  // refuses to run inside one the caller opened (where its START
  // TRANSACTION used to commit the caller's work without a word).
  TEST_CASE(
      "clock_app cannot stall a hierarchy: a call in a transaction it keeps open ends within "
      "1 s or is refused, and a call naming 20,000 resources is refused at once" *
      server::only_on_servers()) {
    TestEnv env;
    ServerRoles roles(env);
    const bool postgres = backend_name() == "postgres";
    const std::string set = server::sql_value(
        env, {.postgres = "SELECT name FROM clock.routine_sets WHERE name <> 'clock'",
              .mariadb = "SELECT suffix FROM routine_sets WHERE suffix <> '' LIMIT 1"});
    REQUIRE(!set.empty());  // clock init installed this release's set
    auto job = env.spawn(env.clock_command(
        {"run", "--ttl", "3s", "-r", "stall.job", "--", "sleep", "5"}, roles.as_app()));
    REQUIRE(await([&] { return !env.holders_of("stall.job").empty(); }, 30s));
    Acquired victim = acquire_as(env, roles.as_app(), {"-r", "stall.victim", "--ttl", "60s"});

    std::unique_ptr<pg::PsqlSession> hostile;
    if (postgres) {
      hostile = std::make_unique<pg::PsqlSession>(env, roles.as_app().at("CLOCK_DATABASE_URL"));
      hostile->execute("\\set ON_ERROR_STOP off");
      hostile->execute("BEGIN");
      std::string granted = hostile->execute(
          "SELECT " + set +
          ".try_acquire('', '{stall.other}', 'exclusive', 0, gen_random_uuid(), 60000, "
          "'r-hostile', true, 'h', '', 1, 'u', 'c', NULL, false, '', 'x')");
      INFO("in a transaction: " << granted);
      CHECK(granted.find("granted") != std::string::npos);
      // Left open, holding the hierarchy's row: the session ends 1 s later.
    } else {
      Result refused = roles.app().sql(
          {.mariadb = "START TRANSACTION; CALL clock_try_acquire" + set +
                      "('', '[\"stall.other\"]', 'exclusive', 0, UUID(), 60000, 'r-hostile', "
                      "true, 'h', '', 1, 'u', 'c', NULL, false, '', 'x', NULL, NULL, 0)"});
      INFO(refused.describe());
      CHECK(refused.status != 0);
      CHECK(refused.err.find("one statement of their own") != std::string::npos);
    }

    auto many = env.spawn(roles.app().client_command(
        {.postgres = "SELECT " + set +
                     ".renew('', (SELECT array_agg('stall.n' || g) FROM generate_series(1, "
                     "20000) g), gen_random_uuid(), '{}', 60000, '', 'x')",
         // Built on the server: one argument may not hold 240 kB.
         .mariadb = "SET max_recursive_iterations = 30000; CALL clock_renew" + set +
                    "('', (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                    "WHERE i < 20000) SELECT JSON_ARRAYAGG(CONCAT('stall.n', i)) FROM n), "
                    "UUID(), '[]', 60000, '', 'x')"}));
    auto sibling = env.spawn(
        env.clock_command({"run", "-n", "-r", "stall.sib", "--", "true"}, roles.as_app()));
    Result forced = env.clock({"release", "--force", "-r", "stall.victim"}, roles.as_operator());
    CHECK_EXIT(forced, 0);
    CHECK(env.holders_of("stall.victim").empty());
    CHECK_EXIT(sibling->wait(60s), 0);
    CHECK_EXIT(job->wait(60s), 0);
    Result many_result = many->wait(120s);
    INFO(many_result.describe());
    CHECK(many_result.status != 0);
    CHECK(many_result.err.find("20000 resources in one call: at most 64") != std::string::npos);
    CHECK(victim.token() > 0);
    Result skipped = env.clock({"history", "stall.sib", "--event", "skipped", "--format", "json"});
    CHECK(json::parse(skipped.out)["events"].empty());
    if (postgres) {
      Result idle = psql(env, env.url(),
                         "SELECT count(*) FROM pg_stat_activity WHERE usename = '" +
                             roles.app_name() + "' AND state LIKE 'idle in transaction%'");
      CHECK(idle.out == "0\n");
      hostile->finish();
    }
  }

  // docs/threat-model.md, "Bounds of a call": every routine of this
  // release that takes hierarchy rows, the ones added for run ends and dead
  // holders too, refuses more than 64 resources and over-long text before
  // it takes any.
  TEST_CASE("every routine of this release refuses 65 resources and over-long text at once" *
            server::only_on_servers()) {
    TestEnv env;
    ServerRoles roles(env);
    // Each call with the refusal it must meet, in the server's dialect.
    std::vector<std::pair<std::string, std::string>> calls;
    std::string force_release;
    if (backend_name() == "postgres") {
      const std::string f = server::sql_value(env, {.postgres = "SELECT name FROM "
                                                                "clock.routine_sets WHERE name <> "
                                                                "'clock'"}) +
                            ".";
      const std::string names = "(SELECT array_agg('b.n' || g) FROM generate_series(1, 65) g)";
      const std::string id = "gen_random_uuid()";
      calls = {
          {"SELECT " + f + "try_acquire('', " + names + ", 'exclusive', 0, " + id +
               ", 60000, 'r', false, 'h', '', 1, 'u', 'c', NULL, false, '', 'x')",
           "65 resources in one call: at most 64"},
          {"SELECT " + f + "renew('', " + names + ", " + id + ", '{}', 60000, '', 'x')",
           "65 resources in one call: at most 64"},
          {"SELECT " + f + "note_leftovers('', " + names + ", " + id + ", '{}', '[]', '', 'x')",
           "65 resources in one call: at most 64"},
          {"SELECT " + f + "release('', " + names + ", " + id + ", '', 'x', 'h', '{}', false)",
           "65 resources in one call: at most 64"},
          {"SELECT " + f + "release2('', " + names + ", " + id +
               ", '', 'x', 'h', '{}', false, 0, NULL)",
           "65 resources in one call: at most 64"},
          {"SELECT " + f + "leave_queue('', " + names + ", " + id + ", 'r', '')",
           "65 resources in one call: at most 64"},
          {"SELECT " + f + "record_missed_run('timed_out', '', " + names + ", " + id +
               ", 'exclusive', 'h', '', 1, 'u', 'c', NULL, '')",
           "65 resources in one call: at most 64"},
          {"SELECT " + f + "expect_runs('', " + names + ", 1000, " + id + ", '', 'x')",
           "65 resources in one call: at most 64"},
          {"SELECT " + f + "try_acquire('', '{b}', 'exclusive', 0, " + id +
               ", 60000, 'r', false, 'h', '', 1, 'u', 'c', NULL, false, '', 'x', NULL, "
               "jsonb_build_object('boot_id', 'b', 'pid_ns', 1, 'pid_start', 1, 'job_group', 0, "
               "'job_cgroup', repeat('x', 4097)))",
           "invalid holder trace"},
          {"SELECT " + f + "end_dead_lease('', 'b', " + id +
               ", 1, 'boot', 1, 1, 1, repeat('x', 513))",
           "too long"},
          {"SELECT " + f + "note_leftovers('', '{b}', " + id +
               ", '{}', (SELECT jsonb_agg(jsonb_build_object('pid', g, 'command', 'x', 'fate', "
               "'running')) FROM generate_series(1, 65) g), '', 'x')",
           "too many leftovers: at most 64"},
          {"SELECT " + f + "note_leftovers('', '{b}', " + id +
               ", '{}', jsonb_build_array(jsonb_build_object('pid', 1, 'command', repeat('x', "
               "140000), 'fate', 'running')), '', 'x')",
           "too many leftovers: at most 64"},
          {"SELECT " + f + "try_acquire('', '{b}', 'exclusive', 0, " + id +
               ", 60000, 'r', false, 'h', '', 1, 'u', repeat('c', 4097), NULL, false, '', 'x')",
           "too long"},
          {"SELECT " + f + "release2('', '{b}', " + id +
               ", '', 'x', 'h', (SELECT array_agg(g::bigint) FROM generate_series(1, 65) g), "
               "false, 0, NULL)",
           "a lineage of 65 pids: at most 64"}};
      force_release = "SELECT " + f + "force_release('', " + names + ", 'x')";
    } else {
      const std::string suffix = server::sql_value(
          env, {.mariadb = "SELECT suffix FROM routine_sets WHERE suffix <> '' LIMIT 1"});
      REQUIRE(!suffix.empty());
      auto call = [&](const std::string& name, const std::string& arguments) {
        return "CALL clock_" + name + suffix + "(" + arguments + ")";
      };
      json names_json = json::array(), pids_json = json::array(), leftovers_json = json::array();
      for (int i = 1; i <= 65; ++i) {
        names_json.push_back("b.n" + std::to_string(i));
        pids_json.push_back(i);
        leftovers_json.push_back({{"pid", i}, {"command", "x"}, {"fate", "running"}});
      }
      const std::string names = "'" + names_json.dump() + "'";
      const std::string pids = "'" + pids_json.dump() + "'";
      const std::string leftovers = "'" + leftovers_json.dump() + "'";
      const std::string id = "UUID()";
      calls = {
          {call("try_acquire", "'', " + names + ", 'exclusive', 0, " + id +
                                   ", 60000, 'r', false, 'h', '', 1, 'u', 'c', NULL, false, '', "
                                   "'x', NULL, NULL, 0"),
           "65 resources in one call: at most 64"},
          {call("renew", "'', " + names + ", " + id + ", '[]', 60000, '', 'x'"),
           "65 resources in one call: at most 64"},
          {call("note_leftovers", "'', " + names + ", " + id + ", '[]', '[]', '', 'x'"),
           "65 resources in one call: at most 64"},
          {call("release", "'', " + names + ", " + id + ", '', 'x', 'h', '[]', false"),
           "65 resources in one call: at most 64"},
          {call("release2", "'', " + names + ", " + id + ", '', 'x', 'h', '[]', false, 0, NULL"),
           "65 resources in one call: at most 64"},
          {call("leave_queue", "'', " + names + ", " + id + ", 'r', ''"),
           "65 resources in one call: at most 64"},
          {call("record_missed_run", "'timed_out', '', " + names + ", " + id +
                                         ", 'exclusive', 'h', '', 1, 'u', 'c', NULL, ''"),
           "65 resources in one call: at most 64"},
          {call("expect_runs", "'', " + names + ", 1000, " + id + ", '', 'x'"),
           "65 resources in one call: at most 64"},
          {call("try_acquire", "'', '[\"b\"]', 'exclusive', 0, " + id +
                                   ", 60000, 'r', false, 'h', '', 1, 'u', 'c', NULL, false, '', "
                                   "'x', NULL, JSON_OBJECT('boot_id', 'b', 'pid_ns', 1, "
                                   "'pid_start', 1, 'job_group', 0, 'job_cgroup', "
                                   "REPEAT('x', 4097)), 0"),
           "invalid holder trace"},
          {call("end_dead_lease", "'', 'b', " + id + ", 1, 'boot', 1, 1, 1, REPEAT('x', 513)"),
           "too long"},
          {call("note_leftovers", "'', '[\"b\"]', " + id + ", '[]', " + leftovers + ", '', 'x'"),
           "too many leftovers: at most 64"},
          {call("note_leftovers", "'', '[\"b\"]', " + id +
                                      ", '[]', JSON_ARRAY(JSON_OBJECT('pid', 1, 'command', "
                                      "REPEAT('x', 140000), 'fate', 'running')), '', 'x'"),
           "too many leftovers: at most 64"},
          {call("try_acquire", "'', '[\"b\"]', 'exclusive', 0, " + id +
                                   ", 60000, 'r', false, 'h', '', 1, 'u', REPEAT('c', 4097), NULL, "
                                   "false, '', 'x', NULL, NULL, 0"),
           "too long"},
          {call("release2",
                "'', '[\"b\"]', " + id + ", '', 'x', 'h', " + pids + ", false, 0, NULL"),
           // Worded otherwise than PostgreSQL's "a lineage of 65 pids: at most 64".
           "a lineage of more than 64 pids"}};
      force_release = call("force_release", "'', " + names + ", 'x'");
    }
    for (const auto& [call, refusal] : calls) {
      Result result = roles.app().sql({.postgres = call, .mariadb = call});
      INFO(call << "\n" << result.describe());
      CHECK(result.status != 0);
      CHECK(result.err.find(refusal) != std::string::npos);
    }
    Result forced =
        roles.operator_login().sql({.postgres = force_release, .mariadb = force_release});
    INFO(forced.describe());
    CHECK(forced.status != 0);
    CHECK(forced.err.find("65 resources in one call: at most 64") != std::string::npos);
  }

  TEST_CASE(
      "clock_app, clock_operator and clock_reader cannot alter the schema or rewrite leases and "
      "history, and clock_reader cannot take, renew or release a lock" *
      server::only_on_servers()) {
    TestEnv env;
    server::AppLogin app(env, 0, "clock_app");
    server::AppLogin op(env, 0, "clock_operator");
    server::AppLogin reader(env, 0, "clock_reader");
    Acquired held = env.acquire({"-r", "kept", "--ttl", "1h"});
    CHECK_EXIT(env.clock({"release", "-r", "kept", "--owner", held.credential}), 0);
    Acquired again = env.acquire({"-r", "kept", "--ttl", "1h"});
    const long long rows = history_rows(env);
    REQUIRE(rows >= 3);
    const json before = env.holders_of("kept").at(0);
    const std::string owner = again.owner;
    for (const server::AppLogin* login : {&app, &op, &reader}) {
      CAPTURE(login->name());
      for (const std::string& sql : forbidden_sql(env))
        check_refused_to(*login, sql);
    }
    for (const std::string& call : calls_beyond_a_reader(env, owner))
      check_refused_to(reader, call);
    if (backend_name() == "mariadb") {
      // MariaDB refuses a routine it does not have as it refuses one the
      // login may not call: the ones named above are there.
      const std::string s = routine_set(env);
      Result named =
          maria::sql(env,
                     "SELECT COUNT(*) FROM information_schema.routines WHERE routine_schema = "
                     "DATABASE() AND routine_name IN ('clock_release" +
                         s + "', 'clock_acq_dequeue" + s + "', 'clock_rec_lock_hierarchies" + s +
                         "', 'clock_try_acquire" + s + "', 'clock_renew" + s +
                         "', 'clock_note_leftovers" + s + "')");
      CHECK(named.out == "6\n");
    }
    CHECK(history_rows(env) == rows);
    auto holders = env.holders_of("kept");
    REQUIRE(holders.size() == 1);
    CHECK(holders[0]["token"] == before["token"]);
    CHECK(holders[0]["expires_at"] == before["expires_at"]);
  }

  TEST_CASE("clock_operator can release --force and gc, recorded with who forced it" *
            server::only_on_servers()) {
    TestEnv env;
    ServerRoles roles(env);
    Acquired victim = env.acquire({"-r", "x"});
    CHECK_EXIT(env.clock({"release", "-r", "x", "--force"}, roles.as_operator()), 0);
    CHECK(env.holders_of("x").empty());
    Acquired next = acquire_as(env, roles.as_operator(), {"-n", "-r", "x"});
    CHECK(next.token() > victim.token());
    Result history = env.clock({"history", "x", "--format", "json"}, roles.as_operator());
    CHECK_EXIT(history, 0);
    CHECK(history.out.find("forced") != std::string::npos);
    const json events = json::parse(history.out)["events"];
    bool by_operator = false;
    for (const json& event : events) {
      if (event.value("event", "") == "forced")
        by_operator = event.value("db_user", "").find(roles.operator_name()) == 0;
    }
    CHECK(by_operator);

    env.acquire({"-r", "short", "--ttl", "1s"});
    REQUIRE(await([&] { return env.holders_of("short").empty(); }, 30s, 100ms));
    Result gc = env.clock({"gc"}, roles.as_operator());
    CHECK_EXIT(gc, 0);
    CHECK(env.holders_of("short", true).empty());
  }

  TEST_CASE(
      "clock_reader reads status, history and missed runs; clock check and clock run tell it "
      "it needs clock_app" *
      server::only_on_servers()) {
    TestEnv env;
    server::AppLogin app(env, 0, "clock_app");
    server::AppLogin reader(env, 0, "clock_reader");
    env.acquire({"-r", "job", "--ttl", "1h"});
    Result status = env.clock({"status", "--format", "json"}, reader.env());
    CHECK_EXIT(status, 0);
    CHECK(status.out.find("\"job\"") != std::string::npos);
    Result history = env.clock({"history", "job", "--format", "json"}, reader.env());
    CHECK_EXIT(history, 0);
    CHECK(history.out.find("acquired") != std::string::npos);
    CHECK_EXIT(env.clock({"missed"}, reader.env()), 0);

    Result check = env.clock({"check"}, reader.env());
    CHECK_EXIT(check, 78);
    INFO(check.out);
    CHECK(check.out.find("try_acquire") != std::string::npos);
    CHECK(check.out.find("clock_app") != std::string::npos);
    CHECK_EXIT(env.clock({"check"}, app.env()), 0);
    Result run = env.clock({"run", "-r", "reader.job", "--", "true"}, reader.env());
    CHECK_EXIT(run, 78);
    INFO(run.err);
    CHECK(run.err.find("roles.sql (clock_app to lock") != std::string::npos);
    CHECK(env.holders_of("reader.job").empty());
  }

  // A login with a password that may not create (on MariaDB it may read the
  // database): PostgreSQL's test server trusts local logins, so there the
  // password is only there to be masked.
  TEST_CASE(
      "a login that may not create the schema: clock init exits 78 pointing at --print-sql, "
      "its password masked" *
      server::only_on_servers()) {
    TestEnv env;
    std::random_device random;
    const std::string name = "clock_test_bare_" + std::to_string(random() % 1'000'000'000);
    std::string url;
    if (backend_name() == "postgres") {
      REQUIRE_EXIT(psql(env, "CREATE ROLE " + name + " LOGIN"), 0);
      url = env.url() + " user=" + name + " password=s3cretpw";
    } else {
      REQUIRE_EXIT(
          maria::sql(env, "CREATE USER '" + name +
                              "'@'localhost' IDENTIFIED BY 's3cretpw'; GRANT SELECT ON " + "`" +
                              maria::database_of(env) + "`.* TO '" + name + "'@'localhost'"),
          0);
      url = env.url();
      url.replace(url.find("root@"), 5, name + ":s3cretpw@");
    }
    Result denied = env.clock({"init"}, {{"CLOCK_DATABASE_URL", url}});
    if (backend_name() == "postgres")
      psql(env, "DROP ROLE IF EXISTS " + name);
    else
      maria::sql(env, "DROP USER IF EXISTS '" + name + "'@'localhost'");
    CHECK_EXIT(denied, 78);
    INFO(denied.err);
    CHECK(denied.err.find("print-sql") != std::string::npos);
    CHECK(denied.err.find("s3cretpw") == std::string::npos);
  }

  // On PostgreSQL, init by a login that may not create exits 78 even on a
  // current schema, in clock_app or not: its migration script is refused
  // ("permission denied for database").
  TEST_CASE(
      "a MariaDB login that may read but not create: init on a current schema exits 0, and "
      "with a wrong password 78, the password masked" *
      only_on("mariadb")) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);
    std::random_device random;
    const std::string name = "clock_test_pw_" + std::to_string(random() % 1'000'000'000);
    REQUIRE_EXIT(maria::sql(env, "CREATE USER '" + name +
                                     "'@'localhost' IDENTIFIED BY 's3cretpw'; GRANT SELECT ON `" +
                                     maria::database_of(env) + "`.* TO '" + name + "'@'localhost'"),
                 0);
    auto url_with = [&](const std::string& password) {
      std::string url = env.url();
      return url.replace(url.find("root@"), 5, name + ":" + password + "@");
    };
    Result current = env.clock({"init"}, {{"CLOCK_DATABASE_URL", url_with("s3cretpw")}});
    Result wrong = env.clock({"init"}, {{"CLOCK_DATABASE_URL", url_with("wr0ngpw")}});
    maria::sql(env, "DROP USER IF EXISTS '" + name + "'@'localhost'");
    CHECK_EXIT(current, 0);
    CHECK_EXIT(wrong, 78);
    INFO(current.err << wrong.err);
    CHECK(current.err.find("s3cretpw") == std::string::npos);
    CHECK(wrong.err.find("wr0ngpw") == std::string::npos);
  }
}
