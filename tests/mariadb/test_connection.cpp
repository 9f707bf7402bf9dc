// The RAII layer over MariaDB Connector/C (src/store/mariadb/connection.*)
// against a real server: tests/helpers/with-mariadb.sh starts one and exports
// CLOCK_TEST_MARIADB_URL; without it every case is skipped (exit 77 from
// main below, which ctest reports as skipped).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <unistd.h>

#include <doctest/doctest.h>

#include "store/mariadb/connection.hpp"
#include "store/mariadb_url.hpp"

using namespace std::chrono_literals;
using clk::store::mariadb::Connection;
using clk::store::mariadb::ConnectOptions;
using clk::store::mariadb::Row;
using clk::store::mariadb::ServerTrouble;
using clk::store::mariadb::Trouble;

namespace {

// The helper's URL ("mariadb://root@localhost/?socket=…") naming `database`.
std::string url_of(const std::string& database) {
  std::string url = std::getenv("CLOCK_TEST_MARIADB_URL");
  std::size_t slash = url.find("/?");
  return slash == std::string::npos ? url + database
                                    : url.substr(0, slash + 1) + database + url.substr(slash + 1);
}

ConnectOptions options_for(const std::string& database) {
  ConnectOptions options;
  options.url = clk::store::parse_mariadb_url(url_of(database));
  options.connect_timeout = 5s;
  return options;
}

// A fresh database per test case, as the integration suites do.
std::string fresh_database() {
  static std::atomic<int> counter{0};
  std::string name = "conn_" + std::to_string(::getpid()) + "_" + std::to_string(++counter);
  Connection admin(options_for("mysql"));
  admin.execute("create database", "CREATE DATABASE `" + name + "`");
  return name;
}

std::string one_value(Connection& connection, const std::string& sql) {
  auto rows = connection.prepare("read", sql).query({});
  REQUIRE(rows.size() == 1);
  return rows[0].at(0).value_or("NULL");
}

Trouble trouble_of(const std::function<void()>& call, unsigned* number = nullptr) {
  try {
    call();
  } catch (const ServerTrouble& trouble) {
    if (number)
      *number = trouble.number();
    return trouble.kind();
  }
  FAIL("no ServerTrouble thrown");
  return Trouble::internal;
}

}  // namespace

TEST_SUITE("mariadb connection") {
  TEST_CASE("a prepared statement binds every parameter and returns rows as text") {
    Connection connection(options_for(fresh_database()));
    connection.execute("create", "CREATE TABLE t (id BIGINT PRIMARY KEY, name MEDIUMTEXT NULL)");
    auto insert = connection.prepare("insert", "INSERT INTO t (id, name) VALUES (?, ?)");
    CHECK(insert.execute({std::int64_t{1}, std::string("one")}) == 1);
    CHECK(insert.execute({std::int64_t{-9'000'000'000'000}, std::monostate{}}) == 1);
    CHECK(insert.execute({std::int64_t{3}, std::string(100'000, 'x')}) == 1);
    auto rows = connection.prepare("select", "SELECT id, name FROM t ORDER BY id").query({});
    REQUIRE(rows.size() == 3);
    CHECK(rows[0] == Row{"-9000000000000", std::nullopt});
    CHECK(rows[1] == Row{"1", "one"});
    CHECK(rows[2].at(1)->size() == 100'000);
  }

  TEST_CASE("a statement given more or fewer parameters than placeholders is a bug (70)") {
    Connection connection(options_for(fresh_database()));
    auto statement = connection.prepare("select", "SELECT ? + ?");
    try {
      statement.query({std::int64_t{1}});
      FAIL("no error");
    } catch (const clk::Error& error) {
      CHECK(error.code() == clk::ExitCode::internal);
    }
    CHECK(statement.query({std::int64_t{1}, std::int64_t{2}}).at(0).at(0) == "3");
  }

  TEST_CASE("an UPDATE that changes nothing still counts the row it matched (same-second renew)") {
    Connection connection(options_for(fresh_database()));
    connection.execute("create",
                       "CREATE TABLE l (k INT PRIMARY KEY, expires DATETIME(0) NOT NULL)");
    connection.execute("insert", "INSERT INTO l VALUES (1, '2030-01-01 00:00:00')");
    // As ShedLock's renewal on a DATETIME(0) column in the grant's second:
    // without CLIENT_FOUND_ROWS this reports 0 rows, read as "lease lost".
    auto renew = connection.prepare("renew", "UPDATE l SET expires = ? WHERE k = ?");
    CHECK(renew.execute({std::string("2030-01-01 00:00:00"), std::int64_t{1}}) == 1);
    CHECK(renew.execute({std::string("2030-01-01 00:00:00"), std::int64_t{2}}) == 0);
  }

  TEST_CASE("the session runs in UTC with utf8mb4") {
    Connection connection(options_for(fresh_database()));
    CHECK(one_value(connection, "SELECT @@session.time_zone") == "+00:00");
    CHECK(one_value(connection, "SELECT @@character_set_client") == "utf8mb4");
    CHECK(one_value(connection, "SELECT TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(), NOW())") == "0");
  }

  TEST_CASE("a lock wait timeout (1205) is a retry, and the connection stays usable") {
    std::string database = fresh_database();
    Connection holder(options_for(database));
    Connection waiter(options_for(database));
    holder.execute("create", "CREATE TABLE r (k INT PRIMARY KEY, v INT) ENGINE=InnoDB");
    holder.execute("insert", "INSERT INTO r VALUES (1, 0)");
    holder.execute("begin", "START TRANSACTION");
    holder.execute("lock", "UPDATE r SET v = 1 WHERE k = 1");
    waiter.execute("short wait", "SET SESSION innodb_lock_wait_timeout = 1");
    unsigned number = 0;
    CHECK(
        trouble_of([&] { waiter.prepare("update", "UPDATE r SET v = 2 WHERE k = 1").execute({}); },
                   &number) == Trouble::retry);
    CHECK(number == 1205);
    CHECK(waiter.is_open());
    holder.execute("commit", "COMMIT");
    CHECK(waiter.prepare("update", "UPDATE r SET v = 2 WHERE k = 1").execute({}) == 1);
  }

  TEST_CASE("a deadlock (1213) is a retry") {
    std::string database = fresh_database();
    Connection a(options_for(database));
    Connection b(options_for(database));
    a.execute("create", "CREATE TABLE r (k INT PRIMARY KEY, v INT) ENGINE=InnoDB");
    a.execute("insert", "INSERT INTO r VALUES (1, 0), (2, 0)");
    a.execute("begin", "START TRANSACTION");
    b.execute("begin", "START TRANSACTION");
    a.execute("lock 1", "UPDATE r SET v = 1 WHERE k = 1");
    b.execute("lock 2", "UPDATE r SET v = 1 WHERE k = 2");
    std::optional<Trouble> a_trouble;
    std::thread first([&] {
      try {
        a.execute("lock 2", "UPDATE r SET v = 2 WHERE k = 2");
      } catch (const ServerTrouble& trouble) {
        a_trouble = trouble.kind();
      }
    });
    std::this_thread::sleep_for(300ms);
    std::optional<Trouble> b_trouble;
    unsigned number = 0;
    try {
      b.execute("lock 1", "UPDATE r SET v = 2 WHERE k = 1");
    } catch (const ServerTrouble& trouble) {
      b_trouble = trouble.kind();
      number = trouble.number();
      b.execute("rollback", "ROLLBACK");
    }
    first.join();
    // InnoDB picks one victim: exactly one of the two got 1213.
    CHECK(a_trouble.has_value() != b_trouble.has_value());
    if (b_trouble) {
      CHECK(*b_trouble == Trouble::retry);
      CHECK(number == 1213);
    } else {
      CHECK(*a_trouble == Trouble::retry);
    }
  }

  TEST_CASE("a server that cannot be reached is unavailable (69), within the connect timeout") {
    ConnectOptions options;
    options.url = clk::store::parse_mariadb_url("mysql://root@127.0.0.1:1/mysql");
    options.connect_timeout = 2s;
    Connection connection(options);
    auto started = std::chrono::steady_clock::now();
    unsigned number = 0;
    CHECK(trouble_of([&] { connection.open(); }, &number) == Trouble::unavailable);
    CHECK((number == 2002 || number == 2003));
    CHECK(std::chrono::steady_clock::now() - started < 3s);
    CHECK(!connection.is_open());
  }

  TEST_CASE("an unknown database is the configuration's to fix (78)") {
    Connection connection(options_for("no_such_database"));
    try {
      connection.open();
      FAIL("no error");
    } catch (const ServerTrouble& trouble) {
      CHECK(trouble.kind() == Trouble::refused);
      CHECK(trouble.number() == 1049);
      CHECK(trouble.code() == clk::ExitCode::config);
    }
  }

  TEST_CASE("a connection killed under it is unavailable, and the next call reconnects") {
    std::string database = fresh_database();
    Connection victim(options_for(database));
    Connection killer(options_for(database));
    std::string id = one_value(victim, "SELECT CONNECTION_ID()");
    killer.execute("kill", "KILL CONNECTION " + id);
    unsigned number = 0;
    CHECK(trouble_of([&] { one_value(victim, "SELECT 1"); }, &number) == Trouble::unavailable);
    CHECK((number == 2006 || number == 2013 || number == 4031));
    CHECK(!victim.is_open());
    CHECK(one_value(victim, "SELECT 1") == "1");
    CHECK(one_value(victim, "SELECT CONNECTION_ID()") != id);
  }

  TEST_CASE("a statement that outlives the read timeout is abandoned as unavailable") {
    ConnectOptions options = options_for(fresh_database());
    options.read_timeout = 1s;
    Connection connection(options);
    auto started = std::chrono::steady_clock::now();
    CHECK(trouble_of([&] { one_value(connection, "SELECT SLEEP(5)"); }) == Trouble::unavailable);
    auto took = std::chrono::steady_clock::now() - started;
    MESSAGE("SELECT SLEEP(5) with a 1 s read timeout gave up after "
            << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
    CHECK(took < 4s);
  }

  TEST_CASE("one CALL is one transaction: its result comes back, and a failure undoes it all") {
    // The shape of every lock procedure to come (docs/mariadb.md): an exit
    // handler that rolls back, READ COMMITTED for the next transaction only,
    // the hierarchy slot written first, one result row after the COMMIT.
    Connection connection(options_for(fresh_database()));
    connection.execute("tables",
                       "CREATE TABLE slots (slot INT PRIMARY KEY, writes BIGINT NOT NULL)");
    connection.execute("tables",
                       "CREATE TABLE leases (resource VARCHAR(10) PRIMARY KEY, "
                       "token BIGINT NOT NULL CHECK (token > 0))");
    connection.execute("slot", "INSERT INTO slots VALUES (1, 0)");
    connection.execute("procedure",
                       "CREATE PROCEDURE grant_one(IN p_resource VARCHAR(10), IN p_token BIGINT)\n"
                       "BEGIN\n"
                       "  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;\n"
                       "  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;\n"
                       "  START TRANSACTION;\n"
                       "  UPDATE slots SET writes = writes + 1 WHERE slot = 1;\n"
                       "  INSERT INTO leases VALUES (p_resource, p_token);\n"
                       "  COMMIT;\n"
                       "  SELECT writes, @@tx_isolation FROM slots WHERE slot = 1;\n"
                       "END");
    auto call = connection.prepare("grant", "CALL grant_one(?, ?)");
    auto rows = call.query({std::string("a"), std::int64_t{1}});
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].at(0) == "1");
    // The session's own level is untouched (no session state left behind).
    CHECK(rows[0].at(1) == "REPEATABLE-READ");
    // The CALL's status result was read: the connection is in sync.
    CHECK(one_value(connection, "SELECT COUNT(*) FROM leases") == "1");
    unsigned number = 0;
    CHECK(trouble_of(
              [&] {
                call.query({std::string("b"), std::int64_t{0}});
              },
              &number) == Trouble::internal);
    CHECK(number == 4025);                                            // the CHECK constraint
    CHECK(one_value(connection, "SELECT writes FROM slots") == "1");  // the slot write undone
    CHECK(trouble_of([&] {
            connection.prepare("grant", "CALL grant_one(?, ?)")
                .query({std::string("a"), std::int64_t{2}});
          }) == Trouble::internal);  // 1062, duplicate key
    CHECK(one_value(connection, "SELECT writes FROM slots") == "1");
    CHECK(one_value(connection, "SELECT @@autocommit") == "1");
  }

  TEST_CASE("what the URL leaves out comes from the option file's [clock] group") {
    std::string database = fresh_database();
    std::string file = "/tmp/clock-mariadb-test-" + std::to_string(::getpid()) + ".cnf";
    {
      std::FILE* out = std::fopen(file.c_str(), "w");
      REQUIRE(out);
      std::fprintf(out, "[client]\nuser=nobody_at_all\n[clock]\nuser=root\nsocket=%s\n",
                   std::getenv("CLOCK_TEST_MARIADB_SOCKET"));
      std::fclose(out);
    }
    ConnectOptions options;
    options.url = clk::store::parse_mariadb_url("mysql:///" + database + "?defaults-file=" + file);
    Connection connection(options);
    CHECK(one_value(connection, "SELECT DATABASE()") == database);
    CHECK(one_value(connection, "SELECT SUBSTRING_INDEX(USER(), '@', 1)") == "root");
    // The URL's user wins over the file's.
    options.url = clk::store::parse_mariadb_url("mysql://nobody_at_all@/" + database +
                                                "?defaults-file=" + file);
    Connection refused(options);
    CHECK(trouble_of([&] { refused.open(); }) == Trouble::refused);
    std::remove(file.c_str());
  }
}
