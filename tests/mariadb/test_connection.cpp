// The RAII layer over MariaDB Connector/C (src/store/mariadb/connection.*)
// against a real server: tests/helpers/with-mariadb.sh starts one and exports
// CLOCK_TEST_MARIADB_URL; without it every case is skipped (exit 77 from
// main below, which ctest reports as skipped).
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

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

// A procedure of the shape of clock's: one transaction, rolled back and
// the error passed on by its exit handler.
constexpr const char* k_bump_procedure =
    "CREATE PROCEDURE bump() BEGIN\n"
    "  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;\n"
    "  START TRANSACTION;\n"
    "  UPDATE r SET v = v + 1 WHERE k = 1;\n"
    "  COMMIT;\n"
    "  SELECT v FROM r WHERE k = 1;\n"
    "END";

// A global status counter of the server.
long status_value(Connection& connection, const std::string& name) {
  auto rows = connection
                  .prepare("status",
                           "SELECT variable_value FROM information_schema.global_status "
                           "WHERE variable_name = ?")
                  .query({name});
  REQUIRE(rows.size() == 1);
  return std::stol(rows[0].at(0).value_or("0"));
}

// Waits, looking every 5 ms, until `ready` says so (at most a minute).
void await(const std::function<bool()>& ready) {
  auto give_up = std::chrono::steady_clock::now() + 60s;
  while (!ready()) {
    REQUIRE(std::chrono::steady_clock::now() < give_up);
    std::this_thread::sleep_for(5ms);
  }
}

// The throwaway server of with-mariadb.sh: its directory holds my.cnf and
// mariadbd.pid, and it runs as CLOCK_TEST_MARIADB_RUN_AS.
std::string server_dir() {
  std::string data = std::getenv("CLOCK_TEST_MARIADB_DATA");
  return data.substr(0, data.rfind('/'));
}

pid_t server_pid() {
  std::FILE* in = std::fopen((server_dir() + "/mariadbd.pid").c_str(), "r");
  REQUIRE(in);
  long pid = 0;
  REQUIRE(std::fscanf(in, "%ld", &pid) == 1);
  std::fclose(in);
  return static_cast<pid_t>(pid);
}

// Shuts the server down (SIGTERM) and waits until its process is gone.
void stop_server() {
  pid_t pid = server_pid();
  REQUIRE(::kill(pid, SIGTERM) == 0);
  await([&] { return ::kill(pid, 0) != 0; });
}

// Starts the server again, as with-mariadb.sh does, without waiting.
void start_server() {
  const char* run_as = std::getenv("CLOCK_TEST_MARIADB_RUN_AS");
  std::string as_user =
      run_as && ::getuid() == 0 ? std::string("runuser -u ") + run_as + " -- " : "";
  std::string command = "cd '" + server_dir() + "' && " + as_user +
                        "$(command -v mariadbd || echo /usr/sbin/mariadbd) --defaults-file='" +
                        server_dir() + "/my.cnf' >/dev/null 2>&1 &";
  REQUIRE(std::system(command.c_str()) == 0);
}

// Waits until the server answers again.
void await_server() {
  await([] {
    try {
      Connection probe(options_for("mysql"));
      probe.open();
      return true;
    } catch (const ServerTrouble&) {
      return false;
    }
  });
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

  TEST_CASE("a session waits for a row lock 5 s, or what the options say, not the server's 50 s") {
    std::string database = fresh_database();
    Connection connection(options_for(database));
    CHECK(one_value(connection, "SELECT @@session.innodb_lock_wait_timeout") == "5");
    ConnectOptions options = options_for(database);
    options.lock_wait_timeout = 1s;
    Connection short_wait(options);
    CHECK(one_value(short_wait, "SELECT @@session.innodb_lock_wait_timeout") == "1");
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

  TEST_CASE("access denied (1045) names the fix: the option group, or the anonymous account") {
    std::string database = fresh_database();
    Connection admin(options_for("mysql"));
    admin.execute("create the login", "CREATE USER pw_login@'%' IDENTIFIED BY 'pw-secret'");
    admin.execute("grant", "GRANT ALL ON `" + database + "`.* TO pw_login@'%'");
    struct Cleanup {
      Connection& admin;
      ~Cleanup() { admin.execute("drop", "DROP USER IF EXISTS pw_login@'%', ''@'localhost'"); }
    } cleanup{admin};
    auto message_of = [](const std::string& url) {
      ConnectOptions options;
      options.url = clk::store::parse_mariadb_url(url);
      options.connect_timeout = 5s;
      Connection connection(options);
      try {
        connection.open();
      } catch (const ServerTrouble& trouble) {
        CHECK(trouble.number() == 1045);
        CHECK(trouble.code() == clk::ExitCode::config);
        return std::string(trouble.what());
      }
      FAIL("no error");
      return std::string();
    };
    std::string as_login = url_of(database);
    as_login.replace(as_login.find("root@"), 5, "pw_login@");

    // No password anywhere: where to put it, for which login.
    std::string no_password = message_of(as_login);
    INFO(no_password);
    CHECK(no_password.find("using password: NO") != std::string::npos);
    CHECK(no_password.find("no password was sent for login pw_login") != std::string::npos);
    CHECK(no_password.find("~/.my.cnf under [clock]") != std::string::npos);

    // The right password, but an anonymous account for localhost is chosen
    // before pw_login@'%'.
    std::string file = "/tmp/clock-mariadb-test-" + std::to_string(::getpid()) + ".cnf";
    {
      std::FILE* out = std::fopen(file.c_str(), "w");
      REQUIRE(out);
      std::fprintf(out, "[clock]\npassword=pw-secret\n");
      std::fclose(out);
    }
    std::string with_password = as_login + "&defaults-file=" + file;
    admin.execute("an anonymous account", "CREATE USER ''@'localhost'");
    std::string shadowed = message_of(with_password);
    INFO(shadowed);
    CHECK(shadowed.find("using password: YES") != std::string::npos);
    CHECK(shadowed.find("anonymous account ''@'localhost'") != std::string::npos);
    CHECK(shadowed.find("DROP USER ''@'localhost'") != std::string::npos);
    // Once it is gone, the same URL gets in.
    admin.execute("drop the anonymous account", "DROP USER ''@'localhost'");
    ConnectOptions options;
    options.url = clk::store::parse_mariadb_url(with_password);
    Connection connection(options);
    CHECK(one_value(connection, "SELECT SUBSTRING_INDEX(USER(), '@', 1)") == "pw_login");
    std::remove(file.c_str());
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
    // The shape of every lock procedure (docs/internals/mariadb.md): an exit
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

  TEST_CASE("call() sends a CALL again after a lock wait timeout (1205) until it gets through") {
    std::string database = fresh_database();
    Connection holder(options_for(database));
    holder.execute("create", "CREATE TABLE r (k INT PRIMARY KEY, v INT) ENGINE=InnoDB");
    holder.execute("insert", "INSERT INTO r VALUES (1, 0)");
    holder.execute("procedure", k_bump_procedure);
    holder.execute("begin", "START TRANSACTION");
    holder.execute("lock", "UPDATE r SET v = 10 WHERE k = 1");
    ConnectOptions options = options_for(database);
    options.lock_wait_timeout = 1s;
    Connection caller(options);
    caller.set_deadline(std::chrono::steady_clock::now() + 30s);
    Connection watcher(options_for(database));
    const long waits_before = status_value(watcher, "Innodb_row_lock_waits");
    // The holder lets go once the caller waited a second time: it was told
    // 1205 once and sent the CALL again.
    std::atomic<bool> done{false};
    std::thread releaser([&] {
      await([&] {
        return done || status_value(watcher, "Innodb_row_lock_waits") >= waits_before + 2;
      });
      holder.execute("commit", "COMMIT");
    });
    std::vector<Row> rows;
    std::string error;
    try {
      rows = caller.call("bump", "CALL bump()", {});
    } catch (const clk::Error& e) {
      error = e.what();
    }
    done = true;
    releaser.join();
    CHECK(error == "");
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].at(0) == "11");
    CHECK(status_value(watcher, "Innodb_row_lock_waits") >= waits_before + 2);
  }

  TEST_CASE("call() sends a CALL again after a deadlock (1213) rolled it back") {
    std::string database = fresh_database();
    Connection other(options_for(database));
    other.execute("create", "CREATE TABLE r (k INT PRIMARY KEY, v INT) ENGINE=InnoDB");
    other.execute("insert", "INSERT INTO r SELECT seq, 0 FROM seq_1_to_20");
    other.execute("procedure",
                  "CREATE PROCEDURE cross_rows() BEGIN\n"
                  "  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;\n"
                  "  START TRANSACTION;\n"
                  "  UPDATE r SET v = v + 1 WHERE k = 1;\n"
                  "  UPDATE r SET v = v + 1 WHERE k = 2;\n"
                  "  COMMIT;\n"
                  "  SELECT v FROM r WHERE k = 2;\n"
                  "END");
    Connection watcher(options_for(database));
    const long deadlocks_before = status_value(watcher, "Innodb_deadlocks");
    // The other transaction writes 19 rows, the CALL one: InnoDB rolls back
    // the smaller, the CALL, when the two wait for each other.
    other.execute("begin", "START TRANSACTION");
    other.execute("rows 2-20", "UPDATE r SET v = v + 100 WHERE k >= 2");
    Connection caller(options_for(database));
    caller.set_deadline(std::chrono::steady_clock::now() + 30s);
    std::atomic<bool> done{false};
    std::string other_error;
    std::thread closer([&] {
      await([&] { return done || status_value(watcher, "Innodb_row_lock_current_waits") >= 1; });
      try {
        other.execute("row 1", "UPDATE r SET v = v + 100 WHERE k = 1");
        other.execute("commit", "COMMIT");
      } catch (const clk::Error& e) {
        other_error = e.what();
      }
    });
    std::vector<Row> rows;
    std::string error;
    try {
      rows = caller.call("cross rows", "CALL cross_rows()", {});
    } catch (const clk::Error& e) {
      error = e.what();
    }
    done = true;
    closer.join();
    CHECK(other_error == "");
    CHECK(error == "");
    CHECK(status_value(watcher, "Innodb_deadlocks") == deadlocks_before + 1);
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].at(0) == "101");  // the other's +100, then the CALL's +1, once
    CHECK(one_value(watcher, "SELECT v FROM r WHERE k = 1") == "101");
  }

  TEST_CASE("call() waits for a server that stops and starts again within its deadline") {
    std::string database = fresh_database();
    Connection caller(options_for(database));
    caller.execute("procedure", "CREATE PROCEDURE one() SELECT 1");
    REQUIRE(one_value(caller, "SELECT 1") == "1");  // open before the stop
    stop_server();
    // Down for about 3 s, the outage this case is about.
    std::thread restarter([] {
      std::this_thread::sleep_for(3s);
      start_server();
    });
    caller.set_deadline(std::chrono::steady_clock::now() + 30s);
    std::vector<Row> rows;
    std::string error;
    try {
      rows = caller.call("one", "CALL one()", {});
    } catch (const clk::Error& e) {
      error = e.what();
    }
    restarter.join();
    await_server();
    CHECK(error == "");
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].at(0) == "1");
  }

  TEST_CASE("call() gives up on a server that stays down with 69 once its deadline passes") {
    std::string database = fresh_database();
    Connection caller(options_for(database));
    caller.execute("procedure", "CREATE PROCEDURE one() SELECT 1");
    stop_server();
    auto started = std::chrono::steady_clock::now();
    caller.set_deadline(started + 2s);
    std::optional<clk::Error> error;
    try {
      caller.call("one", "CALL one()", {});
    } catch (const clk::Error& e) {
      error = e;
    }
    auto took = std::chrono::steady_clock::now() - started;
    start_server();
    await_server();
    REQUIRE(error.has_value());
    CHECK(error->code() == clk::ExitCode::unavailable);
    CHECK(std::string(error->what()).find("gave up after trying for") != std::string::npos);
    CHECK(std::string(error->what()).find('\n') == std::string::npos);
    CHECK(took >= 1900ms);  // not before the deadline
  }

  TEST_CASE("call() waits while the server is full (1040) until a connection is free") {
    std::string database = fresh_database();
    Connection admin(options_for(database));  // root: opened before the limit
    const std::string user = "held_" + std::to_string(::getpid());
    admin.execute("user", "CREATE USER '" + user + "'@'localhost' IDENTIFIED BY 'pw'");
    admin.execute("grant", "GRANT ALL ON `" + database + "`.* TO '" + user + "'@'localhost'");
    admin.execute("procedure", "CREATE PROCEDURE one() SELECT 1");
    ConnectOptions as_user;
    as_user.url =
        clk::store::parse_mariadb_url("mariadb://" + user + ":pw@localhost/" + database +
                                      "?socket=" + std::getenv("CLOCK_TEST_MARIADB_SOCKET"));
    as_user.connect_timeout = 5s;
    const std::string old_limit = one_value(admin, "SELECT @@GLOBAL.max_connections");
    admin.execute("limit", "SET GLOBAL max_connections = 3");
    // Connections held open by the test until the server refuses one.
    std::vector<std::unique_ptr<Connection>> held;
    unsigned refused_with = 0;
    for (int i = 0; i < 10 && refused_with == 0; ++i) {
      auto connection = std::make_unique<Connection>(as_user);
      try {
        connection->open();
        held.push_back(std::move(connection));
      } catch (const ServerTrouble& trouble) {
        refused_with = trouble.number();
      }
    }
    // Connections counts every attempt, refused ones too: nothing else
    // connects while the server is full.
    const long attempts = status_value(admin, "Connections");
    Connection caller(as_user);
    caller.set_deadline(std::chrono::steady_clock::now() + 30s);
    std::atomic<bool> done{false};
    std::thread freer([&] {
      // One connection is let go once the caller was refused and came back.
      await([&] { return done || status_value(admin, "Connections") >= attempts + 2; });
      if (!held.empty())
        held.pop_back();
    });
    std::vector<Row> rows;
    std::string error;
    try {
      rows = caller.call("one", "CALL one()", {});
    } catch (const clk::Error& e) {
      error = e.what();
    }
    done = true;
    freer.join();
    const long caller_attempts = status_value(admin, "Connections") - attempts;
    admin.execute("limit", "SET GLOBAL max_connections = " + old_limit);
    held.clear();
    admin.execute("drop user", "DROP USER '" + user + "'@'localhost'");
    CHECK(refused_with == 1040);
    // Refused, then back: the freer lets a connection go only once the
    // caller's second attempt has been counted, which may then get in (the
    // server counts an attempt before it checks the limit).
    CHECK(caller_attempts >= 2);
    CHECK(error == "");
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].at(0) == "1");
  }
}
