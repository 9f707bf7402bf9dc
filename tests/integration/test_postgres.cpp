// PostgreSQL as the shared lock table (man clock, DATABASE URLS, §5): many processes contending
// directly and through pgbouncer in transaction mode, locks taken by another
// program's own transactions through the SQL functions, a server restart while
// a lease is held, an unreachable server, and the NOTIFY hand-over. They run
// only with CLOCK_TEST_BACKEND=postgres, against the server of
// tests/helpers/with-postgres.sh; under SQLite they report themselves skipped.
// The restart test stops and starts that shared server: ctest runs the
// integration entries one at a time (RESOURCE_LOCK), and the test brings the
// server back before it returns, whatever happened.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

#include <doctest/doctest.h>

#include "fault_tools.hpp"
#include "harness.hpp"
#include "postgres_tools.hpp"
#include "sections.hpp"

using namespace clk::test;
using nlohmann::json;

namespace {

// A call of `function` (try_acquire) asking for one
// exclusive lock on `resource` for `owner`, as another program would make
// it: request id `request`, queued or not, its command line `command`.
std::string acquire_call_sql(const std::string& function, const std::string& resource,
                             const std::string& owner, const std::string& request, bool queue,
                             const std::string& command) {
  return "SELECT clock." + function + "('', ARRAY['" + resource + "'], 'exclusive', 0, '" + owner +
         "'::uuid, 60000, '" + request + "', " + (queue ? "true" : "false") +
         ", 'psql-host', '', 4242, 'tester', '" + command + "', now(), false, NULL, '')";
}

// The same call as the schema of 9784984 took it (no p_record_refusal, no
// secret: the lease it grants has no secret hash, as every lease did then).
std::string legacy_try_acquire_sql(const std::string& resource, const std::string& owner) {
  std::string call =
      acquire_call_sql("try_acquire", resource, owner, "psql-" + owner, false, "psql transaction");
  return call.substr(0, call.size() - std::string(", false, NULL, '')").size()) + ")";
}

// `SELECT clock.try_acquire(…)` of one exclusive lock on `resource` for
// `owner`; not queued.
std::string try_acquire_sql(const std::string& resource, const std::string& owner) {
  return acquire_call_sql("try_acquire", resource, owner, "psql-" + owner, false,
                          "psql transaction");
}

std::string release_sql(const std::string& resource, const std::string& owner) {
  return "SELECT clock.release('', ARRAY['" + resource + "'], '" + owner +
         "'::uuid, NULL, '', '', '{}')";
}

// The token of a granted try_acquire reply; fails the test for any other.
long long granted_token(const std::string& reply_text) {
  INFO("try_acquire replied: " << reply_text);
  json reply;
  REQUIRE_NOTHROW(reply = json::parse(reply_text));
  REQUIRE(reply.value("outcome", "") == "granted");
  return reply.at("grants").at(0).at("token").get<long long>();
}

// How often try_acquire's general path ran in this psql session, as counted
// by the calls of decide(), which only it makes (PostgreSQL keeps counting
// until it flushes, outside a transaction block: compare two counts taken in
// one).
long long general_calls(pg::PsqlSession& psql) {
  return std::stoll("0" + psql.execute("SELECT coalesce(pg_stat_get_xact_function_calls("
                                       "'clock.decide(text, text, text, integer, uuid, text, "
                                       "timestamptz)'::regprocedure), 0)"));
}

// Requires a release reply that freed its one resource completely.
void require_released(const std::string& reply_text) {
  INFO("release replied: " << reply_text);
  json reply;
  REQUIRE_NOTHROW(reply = json::parse(reply_text));
  REQUIRE(reply.at("released").size() == 1);
  REQUIRE(reply.at("released").at(0).at("remaining_depth") == 0);
  REQUIRE(reply.at("refused").empty());
}

// The events of `clock history RESOURCE`, oldest first.
std::vector<json> pg_history_of(const TestEnv& env, const std::string& resource) {
  Result result = env.clock({"history", resource, "--format", "json", "--limit", "1000"});
  INFO(result.describe());
  REQUIRE(result.status == 0);
  json parsed;
  REQUIRE_NOTHROW(parsed = json::parse(result.out));
  std::vector<json> events(parsed.at("events").begin(), parsed.at("events").end());
  std::reverse(events.begin(), events.end());
  return events;
}

bool has_waiter(const TestEnv& env, const std::string& resource) {
  json status = env.status();
  for (const auto& waiter : status.value("waiters", json::array())) {
    if (waiter.value("resource", "") == resource)
      return true;
  }
  return false;
}

// The contention run shared by the direct and the pgbouncer variants:
// `processes` shells each run `iterations` critical sections under
// `clock run -r counter`, with `extra_env` (e.g. another database URL).
void check_contention(const TestEnv& env, int processes, int iterations,
                      const std::map<std::string, std::string>& extra_env) {
  std::vector<Command> commands(
      processes, env.shell_command(looping_script("-r counter", iterations), extra_env));
  auto started = Clock::now();
  std::vector<Result> results = run_all(commands, env.path("output"), 900s);
  MESSAGE(processes << " x " << iterations << " critical sections took "
                    << std::chrono::duration<double>(Clock::now() - started).count() << " s");
  for (const auto& result : results)
    CHECK_EXIT(result, 0);

  CHECK(std::stoll("0" + read_file(env.path("counter"))) == processes * iterations);
  std::vector<Section> sections = read_sections(env.path("log"));
  CHECK(sections.size() == static_cast<std::size_t>(processes * iterations));
  check_sections(sections, true);
}

}  // namespace

TEST_SUITE("stress") {
  TEST_CASE(
      "sixteen processes over PostgreSQL run two hundred and eight critical sections one at a "
      "time, tokens increasing" *
      doctest::timeout(900) * ::clk::test::only_on("postgres")) {
    TestEnv env;
    // Thirteen each: sixteen waiters at every hand-over all the same, in
    // half the 110 s that twenty-five each took on 2 cores.
    check_contention(env, 16, 13, {});
  }

  TEST_CASE(
      "through pgbouncer in transaction mode, contending processes never overlap and tokens "
      "increase" *
      doctest::timeout(900) * ::clk::test::only_on("postgres")) {
    TestEnv env;
    std::string url = pg::pgbouncer_url(env);
    if (url.empty()) {
      MESSAGE("skipped: CLOCK_TEST_PGBOUNCER_URL is not set (with-postgres.sh found no pgbouncer)");
      return;
    }
    // The schema is created through pgbouncer too, then locks are taken there.
    std::map<std::string, std::string> through_bouncer = {{"CLOCK_DATABASE_URL", url}};
    CHECK_EXIT(env.clock({"init"}, through_bouncer), 0);
    check_contention(env, 8, 25, through_bouncer);
  }

  TEST_CASE(
      "--watch-lease through pgbouncer says that notifications cannot arrive there, keeps no "
      "connection for it, and the run goes on" *
      ::clk::test::only_on("postgres")) {
    TestEnv env;
    std::string url = pg::pgbouncer_url(env);
    if (url.empty()) {
      MESSAGE("skipped: CLOCK_TEST_PGBOUNCER_URL is not set (with-postgres.sh found no pgbouncer)");
      return;
    }
    std::map<std::string, std::string> through_bouncer = {{"CLOCK_DATABASE_URL", url}};
    Result result =
        env.clock({"run", "-v", "--watch-lease", "-r", "x", "--", "sleep", "1"}, through_bouncer);
    CHECK_EXIT(result, 0);
    CHECK_MESSAGE(result.err.find("--watch-lease: notifications do not come through this "
                                  "connection") != std::string::npos,
                  result.err);
    CHECK(result.err.find("listening for the loss") == std::string::npos);
  }
}

TEST_SUITE("postgres") {
  TEST_CASE("a lock taken and released through the SQL functions in psql is held in between" *
            ::clk::test::only_on("postgres")) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);
    const std::string owner = random_uuid();
    pg::PsqlSession psql(env, env.url());

    psql.execute("BEGIN");
    long long token = granted_token(psql.execute(try_acquire_sql("shared_job", owner)));
    psql.execute("COMMIT");

    Result held = env.clock({"-v", "acquire", "-n", "-r", "shared_job"});
    CHECK_EXIT(held, 75);
    CHECK(held.err.find(owner) !=
          std::string::npos);  // says who holds it (-v: -n is quiet in a pipe)
    auto holders = env.holders_of("shared_job");
    REQUIRE(holders.size() == 1);
    CHECK(holders[0].value("owner", "") == owner);
    CHECK(holders[0].value("token", 0LL) == token);
    CHECK(holders[0].value("command", "") == "psql transaction");

    psql.execute("BEGIN");
    require_released(psql.execute(release_sql("shared_job", owner)));
    psql.execute("COMMIT");
    CHECK(psql.finish() == 0);

    Acquired after = env.acquire({"-n", "-r", "shared_job"});
    CHECK(after.token() > token);
  }

  // A set's name keeps the first 49 characters of its schema's name: two
  // longer names that share those would name one set. The first call into
  // it then checks the set's stamp, which names its schema (ready_condition
  // in schema.cpp); for shorter names the set's existence is the check.
  TEST_CASE(
      "two schemas whose names share their first 49 characters never share a set of functions: "
      "clock on the second is refused, naming the set, and writes nothing into the first" *
      only_on("postgres")) {
    TestEnv env;
    const std::string prefix(49, 's');
    std::filesystem::create_directories(env.path("xdg-config/clock"));
    auto in_schema = [&](const std::string& schema) {
      write_file(env.path("xdg-config/clock/clock.toml"),
                 "[postgres]\nschema = \"" + schema + "\"\n");
    };
    in_schema(prefix + "_one");
    CHECK_EXIT(env.clock({"run", "-r", "first", "--", "true"}), 0);
    in_schema(prefix + "_two");
    Result second = env.clock({"run", "-r", "second", "--", "true"});
    CHECK(second.status != 0);
    CHECK_MESSAGE(second.err.find("exists but does not hold the functions of schema " + prefix +
                                  "_two") != std::string::npos,
                  second.err);
    pg::PsqlSession psql(env, env.url());
    CHECK(psql.execute("SELECT count(*) FROM " + prefix +
                       "_one.history WHERE resource = 'second'") == "0");
    CHECK(psql.execute("SELECT count(*) FROM " + prefix +
                       "_one.history WHERE resource = 'first'") != "0");
  }

  // Databases migrated before the functions moved to sql/postgres/functions/
  // ran function bodies that are no longer in the migrations: the new binary
  // must re-apply the current functions over them, leases kept.
  TEST_CASE("a schema created by the old layout's SQL upgrades in place with a live lease intact" *
            only_on("postgres")) {
    TestEnv env;
    const std::string owner = random_uuid();
    pg::PsqlSession psql(env, env.url());
    psql.execute("\\i " + std::string(CLOCK_TEST_HELPERS_DIR) + "/postgres_schema_9784984.sql");
    long long token = granted_token(psql.execute(legacy_try_acquire_sql("legacy.job", owner)));
    CHECK(psql.execute("SELECT to_regprocedure('clock.status(text, text, boolean)') IS NOT NULL") ==
          "t");
    // A least-privilege role as the roles.sql of that time left it.
    const std::string role = "clock_upgrade_" + owner.substr(0, 8);
    psql.execute("CREATE ROLE " + role + " NOLOGIN");
    psql.execute(
        "GRANT EXECUTE ON FUNCTION clock.try_acquire(text, text[], text, integer, uuid, "
        "bigint, text, boolean, text, text, bigint, text, text, timestamptz), "
        "clock.renew(text, text[], uuid, bigint[], bigint), clock.release(text, text[], uuid), "
        "clock.history(text, text, integer), clock.leave_queue(text, text[], uuid, text) TO " +
        role);

    auto holders = env.holders_of("legacy.job");  // the first use re-applies the functions
    REQUIRE(holders.size() == 1);
    // The run counts start from the history the old schema held.
    Result metrics = env.clock({"status", "--format", "prometheus"});
    CHECK(runs_total(metrics.out) == std::map<std::string, long long>{{"/legacy.job/acquired", 1}});
    CHECK(holders[0].value("owner", "") == owner);
    CHECK(holders[0].value("token", 0LL) == token);
    CHECK(psql.execute("SELECT count(*) FROM pg_proc WHERE pronamespace = 'clock'::regnamespace "
                       "AND proname IN ('status', 'try_acquire_general', 'release_general')") ==
          "0");
    CHECK(psql.execute("SELECT obj_description('clock'::regnamespace, 'pg_namespace') LIKE "
                       "'clock functions sha256:%'") == "t");
    // Functions whose signature changed keep their grantees (schema.cpp).
    for (const char* successor :
         {"clock.try_acquire(text, text[], text, integer, uuid, bigint, text, boolean, text, text, "
          "bigint, text, text, timestamptz, boolean, text, text, bigint)",
          "clock.renew(text, text[], uuid, bigint[], bigint, text, text)",
          "clock.note_leftovers(text, text[], uuid, bigint[], jsonb, text, text)",
          "clock.release(text, text[], uuid, text, text, text, bigint[], boolean)",
          "clock.record_missed_run(text, text, text[], uuid, text, text, text, bigint, text, text, "
          "jsonb, text)",
          "clock.leave_queue(text, text[], uuid, text, text)",
          "clock.history(text, text, integer, text)"}) {
      INFO(successor);
      CHECK(psql.execute("SELECT has_function_privilege('" + role + "', '" + successor +
                         "', 'EXECUTE')") == "t");
    }
    // The functions added since release 1.0 exist only in this release's
    // set (docs/upgrades.md), and the role gets them there too.
    for (const char* added :
         {"holder_trace", "end_dead_lease", "release2", "history2", "run_results"}) {
      INFO(added);
      CHECK(psql.execute("SELECT count(*) FILTER (WHERE has_function_privilege('" + role +
                         "', p.oid, 'EXECUTE')) || '/' || count(*) FROM pg_proc AS p "
                         "JOIN clock.routine_sets AS s ON p.pronamespace = "
                         "to_regnamespace(quote_ident(s.name)) WHERE p.proname = '" +
                         std::string(added) + "'") == "1/1");
    }
    CHECK(psql.execute("SELECT has_function_privilege('" + role +
                       "', 'clock.gc_batch(integer, bigint, boolean)', 'EXECUTE')") == "f");
    psql.execute("DROP OWNED BY " + role);
    psql.execute("DROP ROLE " + role);

    // The old-format lease keeps no secret hash: its id alone renews and
    // releases it, as before the upgrade, so it is not stranded.
    CHECK(psql.execute("SELECT secret_hash IS NULL FROM clock.leases WHERE resource = "
                       "'legacy.job'") == "t");
    CHECK_EXIT(env.clock({"renew", "-r", "legacy.job", "--owner", owner}), 0);
    CHECK_EXIT(env.clock({"release", "-r", "legacy.job", "--owner", owner}), 0);
    CHECK(env.holders_of("legacy.job").empty());
    Acquired after = env.acquire({"-n", "-r", "legacy.job"});
    CHECK(after.token() > token);
    CHECK(runs_total(env.clock({"status", "--format", "prometheus"}).out) ==
          std::map<std::string, long long>{{"/legacy.job/acquired", 2}});
    CHECK_EXIT(env.clock({"init"}), 0);  // nothing left to do, and no error
    CHECK(psql.finish() == 0);
  }

  // 006's fast path for a queued exclusive request (every contender of a busy
  // job) must answer as the general path does, and must be the one taken.
  TEST_CASE(
      "a queued exclusive attempt names who is in the way as the general path does, "
      "without running it, and is granted once they are gone" *
      ::clk::test::only_on("postgres")) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);
    const std::string holder = random_uuid(), queued = random_uuid(), asker = random_uuid();
    pg::PsqlSession psql(env, env.url());
    psql.execute("SET track_functions = 'all'");
    // In the way of job.part: a lease on its ancestor, and a queue entry of
    // another owner on its descendant.
    long long held = granted_token(psql.execute(
        acquire_call_sql("try_acquire", "job", holder, "r-holder", false, "psql " + holder)));
    json ahead = json::parse(psql.execute(acquire_call_sql("try_acquire", "job.part.sub", queued,
                                                           "r-queued", true, "psql " + queued)));
    REQUIRE(ahead.value("outcome", "") == "blocked");

    // The general path (not queued: no fast path applies, and nothing
    // changes), then the fast one.
    psql.execute("BEGIN");
    long long before = general_calls(psql);
    json general = json::parse(psql.execute(
        acquire_call_sql("try_acquire", "job.part", asker, "r-asker", false, "psql " + asker)));
    CHECK(general_calls(psql) == before + 1);
    psql.execute("COMMIT");
    psql.execute("BEGIN");
    before = general_calls(psql);
    json fast = json::parse(psql.execute(
        acquire_call_sql("try_acquire", "job.part", asker, "r-asker", true, "psql " + asker)));
    CHECK(general_calls(psql) == before);
    psql.execute("COMMIT");
    INFO("general: " << general.dump() << "\nfast: " << fast.dump());
    CHECK(fast.value("outcome", "") == "blocked");
    CHECK(fast.value("outcome", "") == general.value("outcome", ""));
    REQUIRE(fast.at("leases").size() == 1);
    CHECK(fast.at("leases") == general.at("leases"));
    CHECK(fast.at("leases")[0].value("owner", "") == holder);
    REQUIRE(fast.at("waiters").size() == 1);
    CHECK(fast.at("waiters") == general.at("waiters"));
    CHECK(fast.at("waiters")[0].value("owner", "") == queued);
    CHECK(has_waiter(env, "job.part"));

    // Both gone: the same queued request is granted, without the general path.
    require_released(psql.execute(release_sql("job", holder)));
    CHECK(std::stoll(psql.execute("SELECT clock.leave_queue('', ARRAY['job.part.sub'], '" + queued +
                                  "'::uuid, NULL, NULL)")) == 1);
    psql.execute("BEGIN");
    before = general_calls(psql);
    long long granted = granted_token(psql.execute(
        acquire_call_sql("try_acquire", "job.part", asker, "r-asker", true, "psql " + asker)));
    CHECK(general_calls(psql) == before);
    psql.execute("COMMIT");
    CHECK(psql.finish() == 0);
    CHECK(granted > held);
    CHECK_FALSE(has_waiter(env, "job.part"));
    auto holders = env.holders_of("job.part");
    REQUIRE(holders.size() == 1);
    CHECK(holders[0].value("owner", "") == asker);
    CHECK(holders[0].value("token", 0LL) == granted);
    auto events = pg_history_of(env, "job.part");
    REQUIRE(events.size() == 1);
    CHECK(events[0].value("event", "") == "acquired");
    CHECK(events[0].value("token", 0LL) == granted);
  }

  TEST_CASE("clock acquire -n exits 75 at once on a lock taken inside an open psql transaction" *
            ::clk::test::only_on("postgres")) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);
    const std::string owner = random_uuid();
    pg::PsqlSession psql(env, env.url());

    psql.execute("BEGIN");
    granted_token(psql.execute(try_acquire_sql("same", owner)));
    // The transaction stays open: the lock is held by it.

    // man clock, COMMANDS and EXIT STATUS: -n does not wait, and exits 75 when another holds the
    // lock.
    Result nonblocking = env.clock({"acquire", "-n", "-r", "same"});
    CHECK_EXIT(nonblocking, 75);
    // The functions' lock_timeout is 5 s: a -n that reaches it has waited.
    CHECK(nonblocking.seconds < 4.0);

    require_released(psql.execute(release_sql("same", owner)));
    psql.execute("COMMIT");
    CHECK(psql.finish() == 0);
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "same"}), 0);
  }

  TEST_CASE(
      "a lock taken inside an open psql transaction is held until the transaction commits its "
      "release, however long a waiter waits" *
      ::clk::test::only_on("postgres")) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);
    const std::string owner = random_uuid();
    pg::PsqlSession psql(env, env.url());

    psql.execute("BEGIN");
    long long token = granted_token(psql.execute(try_acquire_sql("same", owner)));
    // The transaction stays open from here to its COMMIT.

    auto waiter =
        env.spawn(env.clock_command({"acquire", "--format", "shell", "-w", "60s", "-r", "same"}));
    // man clock, COMMANDS: -w 60s waits up to 60 s, also past the functions' 5 s
    // lock_timeout while the transaction stays open.
    bool waiter_ended = await([&] { return !waiter->running(); }, 7s);
    CHECK_FALSE(waiter_ended);

    require_released(psql.execute(release_sql("same", owner)));
    // Released, but not committed: still nobody else's.
    CHECK(waiter->running());
    psql.execute("COMMIT");
    CHECK(psql.finish() == 0);

    Result granted = waiter->wait(30s);
    CHECK_EXIT(granted, 0);
    if (granted.status == 0) {
      Acquired waiter_grant = parse_acquired_shell(granted.out);
      CHECK(waiter_grant.token() > token);
      CHECK_EXIT(env.clock({"release", "-r", "same", "--owner", waiter_grant.credential}), 0);
    }
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "same"}), 0);

    // History has the transaction's grant and release.
    std::vector<std::string> psql_events;
    for (const auto& event : pg_history_of(env, "same")) {
      if (event.value("owner", "") == owner)
        psql_events.push_back(event.value("event", ""));
    }
    CHECK(psql_events == std::vector<std::string>{"acquired", "released"});
  }

  TEST_CASE(
      "a waiter's first attempt on a held lock does not wait for another first attempt still in "
      "its transaction, and queues behind it" *
      ::clk::test::only_on("postgres")) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);
    Acquired holder = env.acquire({"-r", "busy"});
    const std::string early = random_uuid();
    pg::PsqlSession psql(env, env.url());
    pg::PsqlSession reader(env, env.url());

    // A first attempt, queued, whose transaction stays open: it holds the
    // hierarchy's lock in shared mode only (try_acquire's fast path 3).
    psql.execute("BEGIN");
    std::string reply = psql.execute(
        acquire_call_sql("try_acquire", "busy", early, "psql-" + early, true, "psql waiter"));
    INFO("try_acquire replied: " << reply);
    CHECK(json::parse(reply).value("outcome", "") == "blocked");

    auto waiter = env.spawn(env.clock_command({"acquire", "-w", "60s", "-r", "busy"}));
    // The next first attempt enters the queue meanwhile; under the
    // exclusive lock it would wait for that transaction to end.
    const std::string queued_sql =
        "SELECT count(*) FROM clock.waiters WHERE resource = 'busy' AND owner <> '" + early +
        "'::uuid";
    bool queued = await([&] { return reader.execute(queued_sql).find('1') == 0; }, 20s);
    CHECK(queued);
    psql.execute("COMMIT");
    CHECK(psql.finish() == 0);

    // FIFO: the attempt that came first is first in the queue.
    std::string order = reader.execute(
        "SELECT string_agg(owner::text, ',' ORDER BY position) FROM clock.waiters "
        "WHERE resource = 'busy'");
    CHECK(order.rfind(early, 0) == 0);
    reader.execute("SELECT clock.leave_queue('', ARRAY['busy'], '" + early +
                   "'::uuid, NULL, NULL)");
    CHECK(reader.finish() == 0);
    CHECK_EXIT(env.clock({"release", "-r", "busy", "--owner", holder.credential}), 0);
    CHECK_EXIT(waiter->wait(30s), 0);
  }

  TEST_CASE("a lock taken in a psql transaction that rolls back was never held" *
            ::clk::test::only_on("postgres")) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);
    const std::string owner = random_uuid();
    pg::PsqlSession psql(env, env.url());

    psql.execute("BEGIN");
    long long token = granted_token(psql.execute(try_acquire_sql("rolled", owner)));
    psql.execute("ROLLBACK");
    CHECK(psql.finish() == 0);

    CHECK(env.holders_of("rolled", true).empty());
    Acquired after = env.acquire({"-n", "-r", "rolled"});
    // The token sequence does not roll back: the next grant's token is larger.
    CHECK(after.token() > token);
    for (const auto& event : pg_history_of(env, "rolled"))
      CHECK(event.value("owner", "") != owner);
  }

  TEST_CASE(
      "a lease held across a PostgreSQL restart stays held, and a contender that starts during "
      "the outage runs only after it" *
      doctest::timeout(300) * ::clk::test::only_on("postgres")) {
    TestEnv env;
    pg::ServerRestorer restorer(env);  // after env: the server is up before env drops its database
    REQUIRE(pg::server_answers(env));

    // The holder's child logs a section as it starts and another as it ends,
    // with the marker file in between.
    std::string child =
        "\"$T_CS\" \"$T_DIR/counter\" \"$T_DIR/log\" || exit 2\n"
        "touch \"$T_DIR/holder.started\"\n"
        "i=0\n"
        "while [ ! -e \"$T_DIR/holder.go\" ] && [ \"$i\" -lt 3600 ]; do\n"
        "  sleep 0.05\n  i=$((i + 1))\ndone\n"
        "[ -e \"$T_DIR/holder.go\" ] || exit 3\n"
        "exec \"$T_CS\" \"$T_DIR/counter\" \"$T_DIR/log\"\n";
    auto holder = env.spawn(env.clock_command(
        {"run", "--ttl", "30s", "--heartbeat", "2s", "-r", "job", "--", "sh", "-c", child}));
    REQUIRE(env.await_started("holder"));
    std::vector<Section> first = read_sections(env.path("log"));
    REQUIRE(first.size() == 1);
    const long long holder_token = std::stoll(first[0].token);

    Result stopped = pg::pg_ctl(env, {"stop"});
    REQUIRE_EXIT(stopped, 0);

    // The contender starts while the server is down. clock exits 69 when it
    // cannot connect, so it is retried as a cron job would be: each attempt is
    // counted in contender.attempts.
    std::string contender_script =
        "n=0\n"
        "while :; do\n"
        "  n=$((n + 1)); echo \"$n\" > \"$T_DIR/contender.attempts\"\n"
        "  \"$T_CLOCK\" run -w 60s -r job -- \"$T_CS\" \"$T_DIR/counter\" \"$T_DIR/log\"\n"
        "  status=$?\n"
        "  [ \"$status\" -eq 69 ] && [ \"$n\" -lt 600 ] || exit \"$status\"\n"
        "  sleep 0.1\n"
        "done\n";
    auto contender = env.spawn(env.shell_command(contender_script));
    auto attempts = [&] { return std::atoi(read_file(env.path("contender.attempts")).c_str()); };
    // Its first attempt meets an outage of a few seconds: clock waits
    // through it (-w 60s); a clock that gave up would show a second attempt.
    if (!await([&] { return attempts() >= 2; }, 3s)) {
      MESSAGE("the contender's first attempt did not end during the outage (it waits through it)");
    }
    REQUIRE(attempts() >= 1);

    Result restarted = pg::pg_ctl(env, {"start"});
    REQUIRE_EXIT(restarted, 0);
    REQUIRE(await([&] { return pg::server_answers(env); }, 60s, 100ms));
    const std::string restarted_at = env.status().at("now").get<std::string>();
    MESSAGE("server back at " << restarted_at << " after " << attempts()
                              << " contender attempt(s)");

    // The holder renews its lease on the restarted server, keeping its token,
    // while the contender waits in the queue behind it.
    bool renewed = await(
        [&] {
          auto holders = env.holders_of("job");
          return holders.size() == 1 && holders[0].value("token", 0LL) == holder_token &&
                 holders[0].value("renewed_at", "") > restarted_at;
        },
        30s, 200ms);
    CHECK(renewed);
    CHECK(await([&] { return has_waiter(env, "job"); }, 30s, 100ms));
    CHECK(holder->running());
    CHECK(read_sections(env.path("log")).size() == 1);  // the contender has not run

    env.let_go("holder");
    CHECK_EXIT(holder->wait(60s), 0);
    Result contended = contender->wait(90s);
    CHECK_EXIT(contended, 0);

    std::vector<Section> sections = read_sections(env.path("log"));
    REQUIRE(sections.size() == 3);
    CHECK(std::stoll(sections[0].token) == holder_token);
    CHECK(std::stoll(sections[1].token) == holder_token);
    CHECK(std::stoll(sections[2].token) > holder_token);
    CHECK(sections[2].start > sections[1].end);  // after the holder's child ended
    CHECK(std::stoll("0" + read_file(env.path("counter"))) == 3);

    // The holder's lease was never lost, expired or taken.
    for (const auto& event : pg_history_of(env, "job")) {
      INFO("history: " << event.dump());
      CHECK(event.value("event", "") != "lost");
      CHECK(event.value("event", "") != "expired");
      CHECK(event.value("event", "") != "forced");
    }
  }

  TEST_CASE(
      "a server that accepts connections but never answers: -n exits 69 within the timeout, "
      "-w D within a second of D" *
      ::clk::test::only_on("postgres")) {
    TestEnv env;
    // libpq waits for an answer that never comes.
    SilentPort listener;
    const std::string port = listener.port();

    const std::string url = "postgresql://clock:secret@127.0.0.1:" + port + "/x";
    Result result = env.clock({"--database", url, "acquire", "-n", "-r", "a"}, {}, 60s);
    MESSAGE("gave up on a silent server after " << result.seconds << " s");
    CHECK_EXIT(result, 69);
    CHECK(result.seconds < 10);  // the default connect timeout is 5 s
    REQUIRE(result.err_lines().size() == 1);
    CHECK(result.err_lines()[0].find("127.0.0.1:" + port) != std::string::npos);
    CHECK(result.err.find("secret") == std::string::npos);
    CHECK(result.out.find("secret") == std::string::npos);

    // libpq's connect_timeout counts whole seconds, at least two, per
    // attempt: a retry that starts with half a second left would wait two.
    // With connect_timeout=2 in the URL, -w 2500ms retries at about 2.05 s
    // and -n (5 s) at about 4.1 s; each must still end within a second of
    // its time.
    const std::string two_seconds = url + "?connect_timeout=2";
    Result waited =
        env.clock({"--database", two_seconds, "acquire", "-w", "2500ms", "-r", "a"}, {}, 60s);
    MESSAGE("-w 2500ms against a silent server: exit " << waited.status << " after "
                                                       << waited.seconds << " s");
    CHECK_EXIT(waited, 69);
    CHECK(waited.seconds < 2.5 + 1);
    CHECK(waited.err.find("timeout expired") != std::string::npos);
    Result refused = env.clock({"--database", two_seconds, "acquire", "-n", "-r", "a"}, {}, 60s);
    MESSAGE("-n against a silent server, connect_timeout=2: exit " << refused.status << " after "
                                                                   << refused.seconds << " s");
    CHECK_EXIT(refused, 69);
    CHECK(refused.seconds < 5 + 1);
  }

  // A release wakes the first of several waiters queued on one resource by
  // name (006's release), not by their fallback re-check every 7.5 s.
  TEST_CASE("three queued waiters are handed the lock in their order, each promptly" *
            ::clk::test::only_on("postgres")) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);
    Acquired holder = env.acquire({"-r", "baton"});
    auto queued = [&] {
      json status = env.status();
      std::size_t count = 0;
      for (const auto& w : status.value("waiters", json::array()))
        count += w.value("resource", "") == "baton";
      return count;
    };
    std::vector<std::unique_ptr<Process>> waiters;
    for (std::size_t i = 1; i <= 3; ++i) {
      waiters.push_back(env.spawn(
          env.clock_command({"acquire", "--format", "shell", "-w", "60s", "-r", "baton"})));
      REQUIRE(await([&] { return queued() == i; }, 30s, 50ms));  // queued in this order
    }
    // Past their first "waiting" report (at 1 s), after which a waiter not
    // notified would look again only at its queue-entry refresh (7.5 s).
    REQUIRE(await(
        [&] {
          json status = env.status();
          std::size_t settled = 0;
          for (const auto& w : status.value("waiters", json::array()))
            settled += w.value("resource", "") == "baton" && w.value("waited_ms", 0LL) > 1500;
          return settled == waiters.size();
        },
        30s, 100ms));
    std::string owner = holder.credential;
    long long token = holder.token();
    for (std::size_t i = 0; i < waiters.size(); ++i) {
      CAPTURE(i);
      auto releasing = Clock::now();
      CHECK_EXIT(env.clock({"release", "-r", "baton", "--owner", owner}), 0);
      REQUIRE(await([&] { return !waiters[i]->running(); }, 30s, 1ms));
      double seconds = std::chrono::duration<double>(Clock::now() - releasing).count();
      CHECK(seconds < 2.0);
      Result granted = waiters[i]->wait();
      REQUIRE_EXIT(granted, 0);
      Acquired next = parse_acquired_shell(granted.out);
      CHECK(next.token() > token);
      for (std::size_t later = i + 1; later < waiters.size(); ++later)
        CHECK(waiters[later]->running());
      owner = next.credential;
      token = next.token();
    }
    CHECK_EXIT(env.clock({"release", "-r", "baton", "--owner", owner}), 0);
  }

  TEST_CASE("a waiter is woken promptly when the holder releases" *
            ::clk::test::only_on("postgres")) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);
    std::vector<double> handovers;
    for (int round = 0; round < 3; ++round) {
      CAPTURE(round);
      Acquired holder = env.acquire({"-r", "baton"});
      auto waiter = env.spawn(
          env.clock_command({"acquire", "--format", "shell", "-w", "30s", "-r", "baton"}));
      // Queued, and waiting long enough to be past its first attempts.
      bool waiting = await(
          [&] {
            json status = env.status();
            for (const auto& w : status.value("waiters", json::array())) {
              if (w.value("resource", "") == "baton" && w.value("waited_ms", 0LL) > 1000)
                return true;
            }
            return false;
          },
          30s, 100ms);
      REQUIRE(waiting);
      // From the start of `clock release` to the waiter's exit: both are
      // watched at once, as the waiter may well exit before the release does.
      auto releasing = Clock::now();
      auto release =
          env.spawn(env.clock_command({"release", "-r", "baton", "--owner", holder.credential}));
      std::optional<Clock::time_point> released, woken;
      REQUIRE(await(
          [&] {
            if (!released && !release->running())
              released = Clock::now();
            if (!woken && !waiter->running())
              woken = Clock::now();
            return released && woken;
          },
          30s, 1ms));
      CHECK_EXIT(release->wait(), 0);
      Result granted = waiter->wait();
      REQUIRE_EXIT(granted, 0);
      double seconds = std::chrono::duration<double>(*woken - releasing).count();
      handovers.push_back(seconds);
      CHECK(seconds < 2.0);
      CHECK_EXIT(env.clock({"release", "-r", "baton", "--owner",
                            parse_acquired_shell(granted.out).credential}),
                 0);
    }
    std::string text;
    for (double s : handovers)
      text += std::to_string(static_cast<int>(s * 1000)) + " ms ";
    MESSAGE("hand-over, from starting `clock release` to the waiter's exit: "
            << text << "(the fallback poll is 200-500 ms)");
  }
}
