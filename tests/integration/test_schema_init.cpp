// What clock init and the first use of a database leave on a SQL server:
// every migration of sql/<server>/migrations recorded once, this release's
// routine set complete, the same schema whether clock applies it or the
// server's own client applies what init --print-sql printed, and the first
// schema with a live lease upgraded in place with the lease intact. On
// PostgreSQL and MariaDB with one body; SQLite's own migrations:
// test_sqlite_migrations.cpp.
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "common_helpers.hpp"
#include "harness.hpp"
#include "mariadb_tools.hpp"
#include "server_tools.hpp"

using namespace clk::test;

namespace {

std::filesystem::path backend_sql_dir() {
  return std::filesystem::path(CLOCK_TEST_SQL_DIR) / backend_name();
}

std::set<std::filesystem::path> backend_sql_files(const std::string& folder) {
  std::set<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(backend_sql_dir() / folder)) {
    if (entry.path().extension() == ".sql")
      files.insert(entry.path());
  }
  return files;
}

// The names of the migration files, in order, as schema_migrations records
// them: "001_schema,002_…". Read from the folder, so a new one needs no edit.
std::string migration_files() {
  std::string names;
  for (const auto& file : backend_sql_files("migrations"))
    names += (names.empty() ? "" : ",") + file.stem().string();
  return names;
}

std::string recorded_migrations(const TestEnv& env) {
  return server::sql_value(
      env,
      {.postgres = "SELECT string_agg(name, ',' ORDER BY version) FROM clock.schema_migrations",
       .mariadb = "SELECT GROUP_CONCAT(name ORDER BY version) FROM schema_migrations"});
}

// Every routine this release's folder creates (sql/postgres/functions,
// sql/mariadb/procedures), by its unqualified, unsuffixed name.
std::set<std::string> defined_routines() {
  static const std::regex create(
      R"(CREATE\s+(?:OR\s+REPLACE\s+)?(?:PROCEDURE|FUNCTION)\s+(?:@schema@\.)?`?(\w+))",
      std::regex::icase);
  std::set<std::string> names;
  for (const auto& file :
       backend_sql_files(backend_name() == "postgres" ? "functions" : "procedures")) {
    const std::string text = read_file(file);
    for (std::sregex_iterator it(text.begin(), text.end(), create), end; it != end; ++it)
      names.insert((*it)[1]);
  }
  return names;
}

// The routines of this release's set, by the names defined_routines() gives.
std::set<std::string> installed_routines(const TestEnv& env) {
  const std::string set = server::routine_set(env);
  Result listed = server::sql(
      env, {.postgres = "SELECT DISTINCT proname FROM pg_proc WHERE pronamespace = "
                        "to_regnamespace('" +
                        set + "')",
            .mariadb = "SELECT LEFT(routine_name, CHAR_LENGTH(routine_name) - " +
                       std::to_string(set.size()) +
                       ") FROM information_schema.routines WHERE routine_schema = DATABASE() "
                       "AND RIGHT(routine_name, " +
                       std::to_string(set.size()) + ") = '" + set + "'"});
  REQUIRE_EXIT(listed, 0);
  std::set<std::string> names;
  std::istringstream lines(listed.out);
  for (std::string line; std::getline(lines, line);)
    names.insert(line);
  return names;
}

void check_schema_current(const TestEnv& env) {
  CHECK(recorded_migrations(env) == migration_files());
  CHECK(installed_routines(env) == defined_routines());
}

// What a schema is made of, as text to compare two databases by: every
// column of clock's tables, every routine with its arguments, and the stamps
// that say which routines are installed.
std::string schema_made_of(const TestEnv& env) {
  Result made = server::sql(
      env,
      {.postgres =
           "SELECT concat_ws(' ', table_name, column_name, data_type, is_nullable, column_default) "
           "FROM information_schema.columns WHERE table_schema = 'clock' "
           "UNION ALL SELECT p.oid::regprocedure::text FROM pg_proc AS p JOIN "
           "pg_namespace AS n ON n.oid = p.pronamespace WHERE n.nspname LIKE 'clock%' UNION ALL "
           "SELECT nspname || ' ' || obj_description(oid, 'pg_namespace') FROM pg_namespace "
           "WHERE nspname LIKE 'clock%' UNION ALL SELECT concat_ws(' ', name, release, stamp) "
           "FROM clock.routine_sets ORDER BY 1",
       .mariadb = "SELECT table_name, column_name, column_type, is_nullable, column_default "
                  "FROM information_schema.columns WHERE table_schema = DATABASE() "
                  "ORDER BY table_name, ordinal_position; "
                  "SELECT routine_type, routine_name FROM information_schema.routines "
                  "WHERE routine_schema = DATABASE() ORDER BY CAST(routine_name AS BINARY); "
                  "SELECT sha256 FROM procedures_stamp; "
                  "SELECT suffix, release_name, sha256 FROM routine_sets ORDER BY suffix"});
  REQUIRE_EXIT(made, 0);
  return made.out;
}

bool has_clock_tables(const TestEnv& env) {
  return server::sql_value(env,
                           {.postgres = "SELECT count(*) FROM pg_tables WHERE schemaname = 'clock'",
                            .mariadb = "SELECT COUNT(*) FROM information_schema.tables "
                                       "WHERE table_schema = DATABASE()"}) != "0";
}

// The statement that makes the server's client run the SQL file `path`.
server::Dialects source_file(const std::string& path) {
  return {.postgres = "\\i " + path, .mariadb = "source " + path};
}

const std::string k_first_owner = "11111111-1111-4111-8111-111111111111";
const std::string k_first_secret = "0123456789abcdef0123456789abcdef";

// The first schema each server had: PostgreSQL's of commit 9784984 (no
// owner secrets yet), MariaDB's migration 001 alone.
server::Dialects first_schema_of_server() {
  return source_file(backend_name() == "postgres"
                         ? std::string(CLOCK_TEST_HELPERS_DIR) + "/postgres_schema_9784984.sql"
                         : (backend_sql_dir() / "migrations" / "001_schema.sql").string());
}

// A live lease on `nightly` by k_first_owner in the first schema: granted by
// PostgreSQL's try_acquire of then, written on MariaDB as that release's
// procedures wrote it (schema_migrations came with 003), with k_first_secret's hash.
server::Dialects lease_in_first_schema() {
  return {.postgres = "SELECT clock.try_acquire('', ARRAY['nightly'], 'exclusive', 0, '" +
                      k_first_owner +
                      "'::uuid, 600000, 'r', false, 'h1', '', 100, 'alice', 'backup', now())",
          .mariadb =
              "CREATE TABLE schema_migrations (version INT NOT NULL PRIMARY KEY, name "
              "VARCHAR(255) NOT NULL, applied_at DATETIME(6) NOT NULL DEFAULT UTC_TIMESTAMP(6));\n"
              "INSERT INTO schema_migrations (version, name) VALUES (1, '001_schema');\n"
              "INSERT INTO leases (namespace, resource, owner, mode, slots, token, depth, "
              "request_id, acquired_us, renewed_us, expires_us, ttl_us, host, ip, pid, user_name, "
              "command, secret_hash) VALUES ('', 'nightly', '" +
              k_first_owner +
              "', 'exclusive', 0, 7, 1, 'r', clock_now_us(), clock_now_us(), "
              "clock_now_us() + 600000000, 600000000, 'h1', '10.0.0.1', 100, 'alice', 'backup', "
              "SHA2('" +
              k_first_secret + "', 256));\nUPDATE tokens SET last = 7;"};
}

}  // namespace

TEST_SUITE("init") {
  TEST_CASE(
      "clock init records every migration once and installs this release's routines; again it "
      "changes nothing" *
      server::only_on_servers()) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);
    check_schema_current(env);
    // A slot for every hash of a top-level resource, and -1 for all of them.
    CHECK(server::sql_value(env, {.postgres = "SELECT count(*) FROM clock.hierarchy_locks",
                                  .mariadb = "SELECT COUNT(*) FROM hierarchy_locks"}) == "16385");
    const std::string made = schema_made_of(env);
    const server::Dialects applied = {
        .postgres =
            "SELECT string_agg(version || ' ' || applied_at, ',') FROM "
            "clock.schema_migrations",
        .mariadb = "SELECT GROUP_CONCAT(version, ' ', applied_at) FROM schema_migrations"};
    const std::string first_applied = server::sql_value(env, applied);

    CHECK_EXIT(env.clock({"init"}), 0);
    CHECK(server::sql_value(env, applied) == first_applied);
    CHECK(schema_made_of(env) == made);
  }

  TEST_CASE(
      "the first operation on a database without clock's tables makes them, and one on a "
      "database that lacks this release's routines installs them" *
      server::only_on_servers()) {
    TestEnv env;
    Result status = env.clock({"status"});
    CHECK_EXIT(status, 1);
    CHECK(contains(status.out, "no locks held"));
    check_schema_current(env);

    const std::string set = server::routine_set(env);
    REQUIRE_EXIT(server::sql(env, {.postgres = "DROP SCHEMA " + set +
                                               " CASCADE; DELETE FROM clock.routine_sets WHERE "
                                               "name = '" +
                                               set + "'",
                                   .mariadb = "DELETE FROM routine_sets WHERE suffix = '" + set +
                                              "'; DROP PROCEDURE clock_status_rows" + set +
                                              "; DROP PROCEDURE clock_history2" + set}),
                 0);
    // The first call goes into the set (history2): missing, it fails having
    // done nothing, and the set is installed before the call is made again.
    CHECK_EXIT(env.clock({"history"}), 0);
    check_schema_current(env);
  }

  TEST_CASE(
      "init --print-sql creates nothing, and its SQL applied twice by the server's own client "
      "makes the schema and routines init makes" *
      server::only_on_servers()) {
    TestEnv by_init;
    REQUIRE_EXIT(by_init.clock({"init"}), 0);
    TestEnv printed;
    Result script = printed.clock({"init", "--print-sql"});
    REQUIRE_EXIT(script, 0);
    CHECK_FALSE(has_clock_tables(printed));
    write_file(printed.path("schema.sql"), script.out);
    for (int time = 1; time <= 2; ++time) {
      INFO("applied " << time << " times");
      Result applied = server::sql(printed, source_file(printed.path("schema.sql").string()));
      REQUIRE_EXIT(applied, 0);
    }
    CHECK(schema_made_of(printed) == schema_made_of(by_init));
    CHECK_EXIT(printed.clock({"init"}), 0);
    CHECK_EXIT(printed.clock({"run", "-r", "printed.job", "--", "true"}), 0);
  }

  TEST_CASE(
      "the first schema with a live lease upgrades in place: the lease holds as it was and its "
      "owner releases it" *
      server::only_on_servers()) {
    TestEnv env;
    REQUIRE_EXIT(server::sql(env, first_schema_of_server()), 0);
    REQUIRE_EXIT(server::sql(env, lease_in_first_schema()), 0);
    REQUIRE_EXIT(env.clock({"init"}), 0);
    check_schema_current(env);

    auto holders = env.holders_of("nightly");
    REQUIRE(holders.size() == 1);
    CHECK(holders[0].at("owner") == k_first_owner);
    CHECK(holders[0].at("command") == "backup");
    CHECK(holders[0].at("leftovers").empty());
    const long long token = holders[0].at("token").get<long long>();

    CHECK_EXIT(env.clock({"run", "-n", "-r", "nightly", "--", "true"}), 75);
    Result skipped = env.clock({"history", "nightly", "--event", "skipped", "--format", "json"});
    REQUIRE_EXIT(skipped, 0);
    auto events = nlohmann::json::parse(skipped.out).at("events");
    REQUIRE(events.size() == 1);
    CHECK(events[0].at("in_the_way").at("owner") == k_first_owner);
    CHECK_EXIT(env.clock({"run", "-r", "weekly", "--", "true"}), 0);

    // PostgreSQL's lease predates owner secrets: its id alone proves it.
    const std::string credential =
        backend_name() == "postgres" ? k_first_owner : k_first_owner + "." + k_first_secret;
    CHECK_EXIT(env.clock({"release", "-r", "nightly", "--owner", credential}), 0);
    CHECK(env.holders_of("nightly").empty());
    CHECK(env.acquire({"-n", "-r", "nightly"}).token() > token);
  }

  // PostgreSQL's test server listens on its socket only.
  TEST_CASE("clock init and a run over TCP" * only_on("mariadb")) {
    TestEnv env;
    const std::string tcp =
        maria::with_database(getenv_or("CLOCK_TEST_MARIADB_TCP_URL", ""), maria::database_of(env));
    REQUIRE(tcp.starts_with("mariadb://root@127.0.0.1:"));
    CHECK_EXIT(env.clock({"init"}, {{"CLOCK_DATABASE_URL", tcp}}), 0);
    CHECK_EXIT(env.clock({"run", "-r", "tcp.job", "--", "true"}, {{"CLOCK_DATABASE_URL", tcp}}), 0);
    check_schema_current(env);
  }

  // PostgreSQL's routines read now(), a timestamptz.
  TEST_CASE("MariaDB's clock_now_us() is UTC in microseconds, whatever the session's time zone" *
            only_on("mariadb")) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);
    Result read = server::sql(env, {.mariadb = "SET time_zone = '+09:00'; SELECT clock_now_us(); "
                                               "SET time_zone = '-05:00'; SELECT clock_now_us()"});
    REQUIRE_EXIT(read, 0);
    std::istringstream lines(read.out);
    long long tokyo = 0, new_york = 0;
    lines >> tokyo >> new_york;
    // Hours apart if the zone counted; the same second's count of
    // microseconds as this host's clock if not (an hour allowed for either).
    constexpr long long k_hour_us = 3'600'000'000;
    CHECK(std::llabs(new_york - tokyo) < k_hour_us);
    CHECK(std::llabs(tokyo - static_cast<long long>(std::time(nullptr)) * 1'000'000) < k_hour_us);
  }
  // MariaDB only: a MariaDB database's default character set is the
  // server's unless CREATE DATABASE names one, while the test server's
  // PostgreSQL databases are all UTF8.
  TEST_CASE(
      "on a database whose default character set is latin1, a command, host and user outside "
      "Latin-1 go through clock's routines whole: run, status and history show them" *
      doctest::skip(!maria::enabled())) {
    TestEnv env;
    // As `CREATE DATABASE clock;` makes it on a latin1 server (10.11's
    // default), whatever this server's default is.
    REQUIRE_EXIT(maria::sql(env, "ALTER DATABASE `" + maria::database_of(env) +
                                     "` CHARACTER SET latin1 COLLATE latin1_swedish_ci"),
                 0);
    REQUIRE_EXIT(env.clock({"init"}), 0);
    REQUIRE_EXIT(env.clock({"run", "-r", "snow", "--", "sh", "-c", "true # ☃"}), 0);

    const std::string script = env.holding_script("snow") + " # ☃";
    auto run = env.spawn(env.clock_command({"run", "-r", "snow", "--", "sh", "-c", script}));
    REQUIRE(env.await_started("snow"));
    auto holders = env.holders_of("snow");
    REQUIRE(holders.size() == 1);
    CHECK(contains(holders[0].at("command").get<std::string>(), "# ☃"));
    env.let_go("snow");
    CHECK_EXIT(run->wait(60s), 0);

    // A host and a user outside Latin-1, which this machine's cannot be:
    // a raw call of this release's try_acquire, as clock makes it.
    const std::string set = server::routine_set(env);
    REQUIRE_EXIT(maria::sql(env, "SET NAMES utf8mb4; CALL clock_try_acquire" + set +
                                     "('', '[\"flake\"]', 'exclusive', 0, UUID(), 60000, 'r', "
                                     "false, 'höst-☃', '', 1, 'üser-☃', 'make ☃', NULL, false, "
                                     "'', 'test', NULL, NULL, 0)"),
                 0);
    holders = env.holders_of("flake");
    REQUIRE(holders.size() == 1);
    CHECK(holders[0].at("host") == "höst-☃");
    CHECK(holders[0].at("user") == "üser-☃");
    CHECK(holders[0].at("command") == "make ☃");

    Result history = env.clock({"history", "snow", "--format", "json"});
    REQUIRE_EXIT(history, 0);
    auto events = nlohmann::json::parse(history.out).at("events");
    REQUIRE_FALSE(events.empty());
    for (const auto& event : events)
      CHECK(contains(event.at("command").get<std::string>(), "# ☃"));
  }
}
