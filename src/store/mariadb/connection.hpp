// The thin RAII layer over MariaDB Connector/C: one connection (MYSQL*) and
// its prepared statements (MYSQL_STMT*), the only files of the module that
// include <mysql.h>. Failures leave it as clk::Error; server trouble as
// ServerTrouble, whose kind() says whether a caller may try again.
//
// Every connection is opened the same way (connection.cpp, open()):
// - connect, read and write timeouts, so no call waits without a deadline
//   (Connector/C counts them in whole seconds);
// - CLIENT_FOUND_ROWS: an UPDATE reports the rows it matched, not the rows
//   whose values changed, so a renewal within the same microsecond as the
//   grant (or of a DATETIME(0) column within the same second) never reads
//   as "0 rows: lease lost";
// - the session time zone UTC and utf8mb4, set by MYSQL_INIT_COMMAND so a
//   reconnect gets them too (though clock's times are integer microseconds
//   from UTC_TIMESTAMP(6), which no session time zone changes);
// - with several hosts in the URL (the nodes of a Galera cluster), a
//   connection goes to the host that answered last, then each of the others
//   in the URL's order, each given at most k_connect_timeout_per_node; a
//   statement that loses its node (2006, 2013, 1047 not ready) moves the
//   next connection to the next host, and so does a lock wait timeout
//   (1205) from a node cut off from its cluster (see Connection::judge);
//   and every read waits until its node has applied the cluster's earlier
//   commits (wsrep_sync_wait = 1);
// - no automatic reconnect (MYSQL_OPT_RECONNECT off): a silently new session
//   would hide that a statement's outcome is unknown;
// - the option files (MYSQL_READ_DEFAULT_GROUP): [client], [client-server],
//   [client-mariadb] and the URL's group (default [clock]) of ~/.my.cnf and
//   the system files, or only the URL's defaults-file=. What the URL gives
//   (user, password, host, port, socket, database) wins over the files.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "error.hpp"
#include "store/mariadb_url.hpp"
#include "store/server/session.hpp"

struct st_mysql;
struct st_mysql_stmt;

namespace clk::store::mariadb {

// What a server error means for the caller.
enum class Trouble {
  unavailable,  // the server is full, gone or unreachable: reconnect, back off, try again
  retry,        // deadlock (1213) or lock wait timeout (1205): the statement was rolled back
  refused,      // the login or its database is refused: the configuration must change
  internal,     // anything else: a bug or a schema out of date
};

// The class of a server or client error number (mysqld_error.h, errmsg.h):
// 1040 too many connections, 1203 and 1226 too many connections for the user
// (the server's max_user_connections, the account's MAX_USER_CONNECTIONS), 2002
// and 2003 cannot connect, 2006 server gone, 2013 lost during a query →
// unavailable, and so are 1047 (a Galera node that is not ready) and 1927
// (connection killed: a server shutting down); 1213 and 1205 → retry; 1044 and 1045 access denied,
// 1049 unknown database, 1698 unix_socket login refused, 1142, 1143 and 1370 a privilege the login
// lacks → refused; the rest → internal.
Trouble classify(unsigned error_number);

// A statement or connect that failed on the server's side. code() is
// unavailable (69) for unavailable and retry, config (78) for refused,
// internal (70) for the rest, so that an uncaught one still exits with the
// right code.
class ServerTrouble : public clk::Error {
 public:
  ServerTrouble(Trouble trouble, unsigned number, std::string message);
  Trouble kind() const { return m_trouble; }
  unsigned number() const { return m_number; }
  // Whether the server refused or rolled back the statement, so that it
  // took no effect: 1213 and 1205 (rolled back), 1180 (its commit failed),
  // 1047 (a node not ready runs nothing). A lost connection (2006, 2013)
  // leaves it unknown.
  bool took_no_effect() const;

 private:
  Trouble m_trouble;
  unsigned m_number;
};

// A statement sent whose reply was lost (the connection dropped while it
// ran): it may or may not have taken effect. Exit code unavailable (69).
using server::OutcomeUnknown;

// Whether Connection::call may send a statement again after its connection
// dropped while it ran (server::Resend): `allowed` for a statement that does
// the same when sent twice (a grant by request id, a renewal, a read);
// `if_unsent` for one that must not (a release undoes a re-entry each time),
// which is sent again only when it cannot have run (the connect or prepare
// failed, or the server refused or rolled it back:
// ServerTrouble::took_no_effect), else throws OutcomeUnknown.
using server::Resend;

// One bound parameter: SQL NULL, an integer or a string (bytes).
using Param = std::variant<std::monostate, std::int64_t, std::string>;
using Params = std::vector<Param>;
// One row of a result, each column as text; nullopt for SQL NULL.
using Row = std::vector<std::optional<std::string>>;

struct ConnectOptions {
  MariadbUrl url;
  std::chrono::seconds connect_timeout{10};
  std::chrono::seconds read_timeout{10};
  std::chrono::seconds write_timeout{10};
  // How long one statement waits for a row lock before 1205 (the analogue
  // of PostgreSQL's lock_timeout); whole seconds, at least 1.
  std::chrono::seconds lock_wait_timeout{5};
};

// How long a connect to one node of a list may take before the next is tried.
inline constexpr std::chrono::seconds k_connect_timeout_per_node{2};

// Until a caller sets a deadline: a one-shot command's patience, as on
// PostgreSQL.
inline constexpr std::chrono::seconds k_default_patience{10};

class Statement;

class Connection {
 public:
  explicit Connection(ConnectOptions options);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Opens the connection unless it is open. Throws ServerTrouble.
  void open();
  // The host of the URL this connection uses (or tries next).
  const MariadbHost& host() const;
  // Closes it; the next call opens a new one (connections are borrowed).
  void close() noexcept;
  bool is_open() const { return m_handle != nullptr; }

  // Runs one statement without parameters or a result (SET, DDL).
  void execute(std::string_view what, const std::string& sql);
  // Runs several statements separated by ';' (a migration file; compound
  // statements with BEGIN … END inside are one statement to the server).
  // Multi-statement mode is on only for this call.
  void execute_script(std::string_view what, const std::string& script);
  // A prepared statement on this connection; valid while it stays open.
  Statement prepare(std::string_view what, const std::string& sql);

  // The calls that follow retry server trouble until `retry_until` (none
  // starts after it; a call that cannot succeed by then throws unavailable,
  // 69). Without it, each call tries for k_default_patience.
  void set_deadline(std::chrono::steady_clock::time_point retry_until);

  // Runs one prepared statement (a CALL of a clock procedure, each one
  // transaction) and returns every row of its first result, waiting out
  // server trouble (call.cpp): Trouble::unavailable closes the connection,
  // backs off (util::Backoff) and sends it again on a new one, to the next
  // host of the URL;
  // Trouble::retry (1213, 1205: the transaction was rolled back) backs off
  // and sends it again on the same one. Past the deadline it throws
  // clk::Error(unavailable) with the last trouble; refused and internal
  // trouble is thrown at once. `resend`: see Resend.
  std::vector<Row> call(std::string_view what, const std::string& sql, const Params& params,
                        Resend resend = Resend::allowed);

  // The server's version string ("10.11.6-MariaDB-0+deb12u1").
  std::string server_version();

 private:
  friend class Statement;
  void connect_to(const MariadbHost& host);
  [[noreturn]] void fail(std::string_view what);
  // Error `number` on this connection, with its message: classify(), except
  // that a lock wait timeout (1205) or an unclassified error (a commit that
  // failed, 1180) from a Galera node cut off from its cluster is
  // unavailable, not a reason to send the statement again on the same
  // session nor a bug. A node outside the primary component answers 1205
  // at once to any read under wsrep_sync_wait (and 1047 to anything that
  // touches a table); a write in flight when it leaves fails its commit
  // (1180). So after those the node's own state is asked (cut_off()),
  // which costs a healthy node nothing: it is asked only after an error.
  ServerTrouble judge(unsigned number, std::string message);
  // Whether the node behind this connection is a Galera node that cannot
  // serve: not in the primary component (wsrep_cluster_status), not ready
  // (wsrep_ready) or not synced with the cluster (wsrep_local_state). A
  // server that is no cluster's node (no wsrep status, or "Disconnected":
  // wsrep off) is not cut off; one that cannot answer is.
  bool cut_off();
  // After trouble other than retry the connection is closed (its session
  // may be in any state); after unavailable the next one goes to the next
  // host of the URL.
  void leave_after(Trouble trouble) noexcept;

  // The statement call() sent last, kept prepared for the next call of the
  // same text (a waiter's look, a holder's renewal): one round trip instead
  // of three, and never more than one prepared statement per connection,
  // as before (the server's max_prepared_stmt_count is shared by all).
  // Dropped when the connection closes or a call of it fails.
  struct KeptStatement;
  Statement& kept(std::string_view what, const std::string& sql);

  ConnectOptions m_options;
  std::unique_ptr<KeptStatement> m_kept;
  st_mysql* m_handle = nullptr;
  bool m_connected = false;  // m_handle's connect succeeded
  std::size_t m_host = 0;    // index into m_options.url.hosts
  std::optional<std::chrono::steady_clock::time_point> m_retry_until;
};

// A prepared statement. Every call binds exactly as many parameters as the
// statement has placeholders (else clk::Error(internal)).
class Statement {
 public:
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&&) = delete;
  Statement(const Statement&) = delete;

  // Executes it; returns the affected rows (with CLIENT_FOUND_ROWS: the rows
  // an UPDATE matched).
  std::uint64_t execute(const Params& params);
  // Executes it and returns every row of its (first) result. A CALL's
  // further results are read and dropped; an error among them throws.
  std::vector<Row> query(const Params& params);

 private:
  friend class Connection;
  Statement(Connection& connection, std::string_view what, st_mysql_stmt* handle);
  void bind_and_execute(const Params& params);
  void drain_results();
  [[noreturn]] void fail();

  Connection* m_connection;
  std::string m_what;
  st_mysql_stmt* m_handle;
};

struct Connection::KeptStatement {
  std::string sql;
  Statement statement;
};

}  // namespace clk::store::mariadb
