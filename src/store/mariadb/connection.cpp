// See connection.hpp. Every Connector/C call's failure goes through fail(),
// which classifies the error number once.
#include "store/mariadb/connection.hpp"

#include <algorithm>
#include <cstring>
#include <errmsg.h>
#include <mutex>
#include <mysql.h>
#include <mysqld_error.h>
#include <strings.h>

#include <spdlog/spdlog.h>

#include "store/mariadb/access_denied.hpp"
#include "store/mariadb/option_files.hpp"

namespace clk::store::mariadb {

Trouble classify(unsigned error_number) {
  switch (error_number) {
    case ER_CON_COUNT_ERROR:            // 1040 too many connections
    case ER_TOO_MANY_USER_CONNECTIONS:  // 1203 the server's max_user_connections
    case ER_USER_LIMIT_REACHED:         // 1226 the account's own, e.g. MAX_USER_CONNECTIONS
    case CR_CONNECTION_ERROR:           // 2002 cannot connect through the socket
    case CR_CONN_HOST_ERROR:            // 2003 cannot connect to host
    case CR_SERVER_GONE_ERROR:          // 2006
    case CR_SERVER_LOST:                // 2013 lost during a query
    case ER_UNKNOWN_COM_ERROR:          // 1047 a Galera node not ready (not in the primary view)
    case ER_CONNECTION_KILLED:          // 1927 a server shutting down
      return Trouble::unavailable;
    case ER_LOCK_DEADLOCK:      // 1213 (also Galera's certification failure)
    case ER_LOCK_WAIT_TIMEOUT:  // 1205
      return Trouble::retry;
    case ER_DBACCESS_DENIED_ERROR:            // 1044
    case ER_ACCESS_DENIED_ERROR:              // 1045
    case ER_BAD_DB_ERROR:                     // 1049 unknown database
    case ER_ACCESS_DENIED_NO_PASSWORD_ERROR:  // 1698 (unix_socket)
    case ER_TABLEACCESS_DENIED_ERROR:         // 1142 a table privilege
    case ER_COLUMNACCESS_DENIED_ERROR:        // 1143
    case ER_PROCACCESS_DENIED_ERROR:          // 1370 EXECUTE on a procedure
      return Trouble::refused;
    default:
      return Trouble::internal;
  }
}

bool ServerTrouble::took_no_effect() const {
  return m_number == ER_LOCK_DEADLOCK || m_number == ER_LOCK_WAIT_TIMEOUT ||
         m_number == ER_UNKNOWN_COM_ERROR || m_number == ER_ERROR_DURING_COMMIT;
}

ServerTrouble::ServerTrouble(Trouble trouble, unsigned number, std::string message)
    : clk::Error(trouble == Trouble::internal  ? ExitCode::internal
                 : trouble == Trouble::refused ? ExitCode::config
                                               : ExitCode::unavailable,
                 std::move(message)),
      m_trouble(trouble),
      m_number(number) {}

namespace {

// mysql_init() initialises the library on first use, but not thread-safely.
void init_library() {
  static std::once_flag once;
  std::call_once(once, [] { mysql_library_init(0, nullptr, nullptr); });
}

const char* c_str_or_null(const std::optional<std::string>& value) {
  return value ? value->c_str() : nullptr;
}

// Connector/C takes timeouts in whole seconds: at least one.
unsigned int whole_seconds(std::chrono::seconds value) {
  return static_cast<unsigned int>(std::max<std::chrono::seconds::rep>(value.count(), 1));
}

void set_option(MYSQL* handle, mysql_option option, const void* value) {
  if (mysql_optionsv(handle, option, value) != 0) {
    throw clk::Error(ExitCode::internal,
                     "MariaDB client library refused option " + std::to_string(option));
  }
}

void set_string(MYSQL* handle, mysql_option option, const std::optional<std::string>& value) {
  if (value)
    set_option(handle, option, value->c_str());
}

void set_tls(MYSQL* handle, const MariadbTls& tls) {
  if (tls.enforce) {
    my_bool on = *tls.enforce ? 1 : 0;
    set_option(handle, MYSQL_OPT_SSL_ENFORCE, &on);
  }
  if (tls.verify_server_cert) {
    my_bool on = *tls.verify_server_cert ? 1 : 0;
    set_option(handle, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &on);
  }
  set_string(handle, MYSQL_OPT_SSL_CA, tls.ca);
  set_string(handle, MYSQL_OPT_SSL_CAPATH, tls.capath);
  set_string(handle, MYSQL_OPT_SSL_CERT, tls.cert);
  set_string(handle, MYSQL_OPT_SSL_KEY, tls.key);
  set_string(handle, MYSQL_OPT_SSL_CIPHER, tls.cipher);
  set_string(handle, MYSQL_OPT_SSL_CRL, tls.crl);
  set_string(handle, MYSQL_OPT_SSL_CRLPATH, tls.crlpath);
  set_string(handle, MARIADB_OPT_TLS_VERSION, tls.version);
}

}  // namespace

Connection::Connection(ConnectOptions options) : m_options(std::move(options)) {}

Connection::~Connection() {
  close();
}

void Connection::open() {
  if (m_handle)
    return;
  m_kept.reset();  // of the session that closed: detached, freed here
  // Each host once, from the one that answered last: a host that does not
  // answer is passed over at once for the next (fail() moves m_host on).
  const std::size_t hosts = m_options.url.hosts.size();
  for (std::size_t tried = 1;; ++tried) {
    try {
      connect_to(m_options.url.hosts[m_host]);
      return;
    } catch (const ServerTrouble& trouble) {
      if (trouble.kind() != Trouble::unavailable || tried >= hosts)
        throw;
      spdlog::debug("{}; trying the next host", trouble.what());
    }
  }
}

void Connection::connect_to(const MariadbHost& host) {
  init_library();
  // Before Connector/C reads them: one that others may write is refused.
  check_option_files(m_options.url.defaults_file);
  MYSQL* handle = mysql_init(nullptr);
  if (!handle)
    throw clk::Error(ExitCode::internal, "MariaDB client library: out of memory");
  m_handle = handle;
  const MariadbUrl& url = m_options.url;
  // With a list of hosts a node that does not answer is given less time, so
  // that a holder reaches the next before its lease is at risk.
  auto connect_timeout = m_options.connect_timeout;
  if (url.hosts.size() > 1)
    connect_timeout = std::min(connect_timeout, k_connect_timeout_per_node);
  unsigned int connect = whole_seconds(connect_timeout);
  unsigned int read = whole_seconds(m_options.read_timeout);
  unsigned int write = whole_seconds(m_options.write_timeout);
  my_bool off = 0;
  // wsrep_sync_wait = 1 makes every read of a Galera node wait until the
  // node has applied what the cluster committed before it (a read that
  // decides sees the last grant, whichever node made it). It is written as
  // MariaDB's executable comment, so MySQL, which has no such variable,
  // reads a comment; on a server that is not a Galera node it does nothing.
  const std::string init_command = "SET time_zone = '+00:00', innodb_lock_wait_timeout = " +
                                   std::to_string(whole_seconds(m_options.lock_wait_timeout)) +
                                   " /*M!100400 , wsrep_sync_wait = 1 */";
  try {
    set_option(handle, MYSQL_OPT_CONNECT_TIMEOUT, &connect);
    set_option(handle, MYSQL_OPT_READ_TIMEOUT, &read);
    set_option(handle, MYSQL_OPT_WRITE_TIMEOUT, &write);
    set_option(handle, MYSQL_OPT_RECONNECT, &off);
    set_option(handle, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    set_option(handle, MYSQL_INIT_COMMAND, init_command.c_str());
    set_option(handle, MYSQL_READ_DEFAULT_GROUP, url.option_group.c_str());
    set_string(handle, MYSQL_READ_DEFAULT_FILE, url.defaults_file);
    set_tls(handle, url.tls);
  } catch (...) {
    close();
    throw;
  }
  if (!mysql_real_connect(handle, c_str_or_null(host.name), c_str_or_null(url.user),
                          c_str_or_null(url.password), url.database.c_str(), host.port,
                          c_str_or_null(url.socket), CLIENT_FOUND_ROWS | CLIENT_MULTI_RESULTS)) {
    fail(url.hosts.size() > 1 ? "connect to " + host.label() : std::string("connect"));
  }
  m_connected = true;
}

const MariadbHost& Connection::host() const {
  return m_options.url.hosts[m_host];
}

void Connection::close() noexcept {
  if (m_handle) {
    mysql_close(m_handle);
    m_handle = nullptr;
  }
  m_connected = false;
}

namespace {

// Readable on a node outside the primary component: SHOW is neither refused
// (1047) nor held by wsrep_sync_wait = 1, which only waits before SHOW at 8.
constexpr std::string_view k_node_state_sql =
    "SHOW GLOBAL STATUS WHERE Variable_name IN "
    "('wsrep_cluster_status', 'wsrep_ready', 'wsrep_local_state')";

// wsrep_local_state 4: Synced (1 Joining, 2 Donor, 3 Joined).
constexpr std::string_view k_synced = "4";

}  // namespace

bool Connection::cut_off() {
  if (!m_connected)
    return false;  // the connect failed: its error is what it is
  if (mysql_real_query(m_handle, k_node_state_sql.data(), k_node_state_sql.size()) != 0)
    return true;
  MYSQL_RES* result = mysql_store_result(m_handle);
  if (!result)
    return true;
  std::string cluster, ready, state;
  while (MYSQL_ROW row = mysql_fetch_row(result)) {
    if (!row[0] || !row[1])
      continue;
    if (strcasecmp(row[0], "wsrep_cluster_status") == 0)
      cluster = row[1];
    else if (strcasecmp(row[0], "wsrep_ready") == 0)
      ready = row[1];
    else if (strcasecmp(row[0], "wsrep_local_state") == 0)
      state = row[1];
  }
  mysql_free_result(result);
  if (cluster.empty() || cluster == "Disconnected")
    return false;  // not a cluster's node: a 1205 is a row lock's wait
  return cluster != "Primary" || ready != "ON" || state != k_synced;
}

ServerTrouble Connection::judge(unsigned number, std::string message) {
  if (number == ER_PROCACCESS_DENIED_ERROR) {
    message +=
        "; the login needs the grants of sql/mariadb/roles.sql (clock_app to lock, "
        "clock_operator for --force and gc): run 'clock check' as this login to see what it "
        "lacks";
  }
  Trouble trouble = classify(number);
  // Not asked after 1213 (a certification failure, frequent under
  // contention and never a cut-off node's answer), after trouble that moves
  // on anyway, nor after the client library's own errors (2000 and up: a
  // session out of step answers nothing reliably).
  const bool ask =
      number == ER_LOCK_WAIT_TIMEOUT || (trouble == Trouble::internal && number < CR_MIN_ERROR);
  if (ask && cut_off()) {
    trouble = Trouble::unavailable;
    message += "; the Galera node " + host().label() +
               " is cut off from its cluster (not in the primary component, not ready or not "
               "synced)";
  }
  return ServerTrouble(trouble, number, std::move(message));
}

void Connection::leave_after(Trouble trouble) noexcept {
  // A connection that met trouble is not used again: its session may be in
  // any state (a half-read reply, a rolled-back transaction).
  if (trouble != Trouble::retry)
    close();
  // A host that cannot be reached, is full, dropped the statement, is not
  // ready (1047) or is cut off from its cluster is left for the next of
  // the list, if there is one: any node of a Galera cluster serves every
  // request.
  if (trouble == Trouble::unavailable)
    m_host = (m_host + 1) % m_options.url.hosts.size();
}

void Connection::fail(std::string_view what) {
  unsigned number = mysql_errno(m_handle);
  std::string message = "MariaDB: " + std::string(what) + " failed: " + mysql_error(m_handle) +
                        " (error " + std::to_string(number) + ")";
  if (number == ER_ACCESS_DENIED_ERROR)
    message += access_denied_hint(mysql_error(m_handle), m_options.url);
  ServerTrouble trouble = judge(number, std::move(message));
  leave_after(trouble.kind());
  throw trouble;
}

void Connection::execute(std::string_view what, const std::string& sql) {
  open();
  if (mysql_real_query(m_handle, sql.data(), sql.size()) != 0)
    fail(what);
  if (MYSQL_RES* result = mysql_store_result(m_handle))
    mysql_free_result(result);
}

void Connection::execute_script(std::string_view what, const std::string& script) {
  open();
  if (mysql_set_server_option(m_handle, MYSQL_OPTION_MULTI_STATEMENTS_ON) != 0)
    fail(what);
  if (mysql_real_query(m_handle, script.data(), script.size()) != 0)
    fail(what);
  // Each statement's result (or error) in turn; an error stops the script.
  for (;;) {
    if (MYSQL_RES* result = mysql_store_result(m_handle))
      mysql_free_result(result);
    int next = mysql_next_result(m_handle);
    if (next < 0)
      break;
    if (next > 0)
      fail(what);
  }
  if (mysql_set_server_option(m_handle, MYSQL_OPTION_MULTI_STATEMENTS_OFF) != 0)
    fail(what);
}

std::string Connection::server_version() {
  open();
  return mysql_get_server_info(m_handle);
}

Statement Connection::prepare(std::string_view what, const std::string& sql) {
  open();
  MYSQL_STMT* handle = mysql_stmt_init(m_handle);
  if (!handle)
    fail(what);
  if (mysql_stmt_prepare(handle, sql.data(), sql.size()) != 0) {
    Statement failed(*this, what, handle);
    failed.fail();
  }
  return Statement(*this, what, handle);
}

Statement::Statement(Connection& connection, std::string_view what, st_mysql_stmt* handle)
    : m_connection(&connection), m_what(what), m_handle(handle) {}

Statement::Statement(Statement&& other) noexcept
    : m_connection(other.m_connection), m_what(std::move(other.m_what)), m_handle(other.m_handle) {
  other.m_handle = nullptr;
}

Statement::~Statement() {
  // After mysql_close() the statement is detached (nothing to free on the
  // server) but its memory is still ours.
  if (m_handle)
    mysql_stmt_close(m_handle);
}

void Statement::fail() {
  unsigned number = mysql_stmt_errno(m_handle);
  ServerTrouble trouble =
      m_connection->judge(number, "MariaDB: " + m_what + " failed: " + mysql_stmt_error(m_handle) +
                                      " (error " + std::to_string(number) + ")");
  if (trouble.kind() != Trouble::retry) {
    mysql_stmt_close(m_handle);
    m_handle = nullptr;
  }
  m_connection->leave_after(trouble.kind());
  throw trouble;
}

void Statement::bind_and_execute(const Params& params) {
  if (!m_handle)
    throw clk::Error(ExitCode::internal, "MariaDB: " + m_what + ": statement already failed");
  unsigned long expected = mysql_stmt_param_count(m_handle);
  if (expected != params.size()) {
    throw clk::Error(ExitCode::internal, "MariaDB: " + m_what + " has " + std::to_string(expected) +
                                             " placeholders but " + std::to_string(params.size()) +
                                             " parameters");
  }
  std::vector<MYSQL_BIND> binds(params.size());
  std::vector<long long> integers(params.size());
  std::vector<unsigned long> lengths(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    MYSQL_BIND& bind = binds[i];
    std::memset(&bind, 0, sizeof bind);
    if (std::holds_alternative<std::monostate>(params[i])) {
      bind.buffer_type = MYSQL_TYPE_NULL;
    } else if (const auto* integer = std::get_if<std::int64_t>(&params[i])) {
      integers[i] = *integer;
      bind.buffer_type = MYSQL_TYPE_LONGLONG;
      bind.buffer = &integers[i];
    } else {
      const auto& text = std::get<std::string>(params[i]);
      lengths[i] = text.size();
      bind.buffer_type = MYSQL_TYPE_STRING;
      bind.buffer = const_cast<char*>(text.data());
      bind.buffer_length = text.size();
      bind.length = &lengths[i];
    }
  }
  if (!binds.empty() && mysql_stmt_bind_param(m_handle, binds.data()) != 0)
    fail();
  my_bool update_max_length = 1;
  mysql_stmt_attr_set(m_handle, STMT_ATTR_UPDATE_MAX_LENGTH, &update_max_length);
  if (mysql_stmt_execute(m_handle) != 0)
    fail();
}

// A CALL answers with its result sets and then a status packet, each a
// result of its own: all are read here, so that the next statement on the
// connection is not "out of sync" (2014), and an error after the first
// result (a procedure's RESIGNAL) is not missed.
void Statement::drain_results() {
  mysql_stmt_free_result(m_handle);
  while (mysql_stmt_more_results(m_handle)) {
    int next = mysql_stmt_next_result(m_handle);
    if (next > 0)
      fail();
    if (next < 0)
      break;
    mysql_stmt_free_result(m_handle);
  }
}

std::uint64_t Statement::execute(const Params& params) {
  bind_and_execute(params);
  auto affected = mysql_stmt_affected_rows(m_handle);
  drain_results();
  return affected == static_cast<my_ulonglong>(-1) ? 0 : affected;
}

std::vector<Row> Statement::query(const Params& params) {
  bind_and_execute(params);
  std::vector<Row> rows;
  MYSQL_RES* meta = mysql_stmt_result_metadata(m_handle);
  if (!meta) {
    drain_results();
    return rows;
  }
  if (mysql_stmt_store_result(m_handle) != 0) {
    mysql_free_result(meta);
    fail();
  }
  unsigned columns = mysql_num_fields(meta);
  MYSQL_FIELD* fields = mysql_fetch_fields(meta);
  std::vector<MYSQL_BIND> binds(columns);
  std::vector<std::string> buffers(columns);
  std::vector<unsigned long> lengths(columns);
  std::vector<my_bool> nulls(columns);
  for (unsigned i = 0; i < columns; ++i) {
    // max_length is exact for strings; a number fetched as text needs at most 64.
    buffers[i].resize(std::max<unsigned long>(fields[i].max_length, 64) + 1);
    std::memset(&binds[i], 0, sizeof binds[i]);
    binds[i].buffer_type = MYSQL_TYPE_STRING;
    binds[i].buffer = buffers[i].data();
    binds[i].buffer_length = buffers[i].size();
    binds[i].length = &lengths[i];
    binds[i].is_null = &nulls[i];
  }
  mysql_free_result(meta);
  if (columns > 0 && mysql_stmt_bind_result(m_handle, binds.data()) != 0)
    fail();
  for (;;) {
    int status = mysql_stmt_fetch(m_handle);
    if (status == MYSQL_NO_DATA)
      break;
    if (status == 1)
      fail();
    Row row(columns);
    for (unsigned i = 0; i < columns; ++i) {
      if (nulls[i])
        continue;
      if (lengths[i] > buffers[i].size()) {
        // Truncated (MYSQL_DATA_TRUNCATED): fetch this column whole.
        std::string whole(lengths[i], '\0');
        MYSQL_BIND bind;
        std::memset(&bind, 0, sizeof bind);
        bind.buffer_type = MYSQL_TYPE_STRING;
        bind.buffer = whole.data();
        bind.buffer_length = whole.size();
        if (mysql_stmt_fetch_column(m_handle, &bind, i, 0) != 0)
          fail();
        row[i] = std::move(whole);
      } else {
        row[i] = std::string(buffers[i].data(), lengths[i]);
      }
    }
    rows.push_back(std::move(row));
  }
  drain_results();
  return rows;
}

}  // namespace clk::store::mariadb
