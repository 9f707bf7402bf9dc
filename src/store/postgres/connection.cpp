// libpqxx behind Connection: opening with clock's defaults, running one
// statement per call, LISTEN, and turning libpqxx's exceptions into
// clk::Error where they are understood.
#include "store/postgres/connection.hpp"

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <thread>
#include <utility>

#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

#include "error.hpp"
#include "store/postgres/bounded_connection.hpp"
#include "store/postgres/conninfo.hpp"
#include "store/postgres/password_hint.hpp"
#include "store/postgres/test_fault.hpp"
#include "store/server/trouble_retry.hpp"
#include "store/store.hpp"
#include "util/backoff.hpp"
#include "util/duration.hpp"
#include "util/password.hpp"

namespace clk::store::postgres {

using namespace std::chrono;

// NoticeLog and ChangeListener are members' types of Connection::Session,
// which has external linkage, so they are not in an anonymous namespace.

// Server notices (NOTICE, WARNING) go to the debug log, not to stderr.
class NoticeLog final : public pqxx::errorhandler {
 public:
  explicit NoticeLog(pqxx::connection_base& conn) : pqxx::errorhandler(conn) {}
  bool operator()(const char message[]) noexcept override {
    try {
      spdlog::debug("postgres: {}", one_line(message));
    } catch (...) {
    }
    return false;
  }
};

// How often a waiter looks again for notifications at most (Connection::await).
constexpr milliseconds k_notified_recheck{20};

// Registering it LISTENs. The functions of sql/postgres address a
// notification to one waiter (its owner id as payload) or to all (empty).
class ChangeListener final : public pqxx::notification_receiver {
 public:
  using pqxx::notification_receiver::notification_receiver;
  void operator()(const std::string& payload, int) override {
    if (payload.empty() || payload == wanted)
      woken = true;
  }
  std::string wanted;
  bool woken = false;
};

namespace {

bool is_missing_schema(const std::string& state) {
  return state == "42P01" || state == "42883" || state == "3F000";
}

bool contains_any(const std::string& text, std::initializer_list<std::string_view> needles) {
  for (auto needle : needles) {
    if (text.find(needle) != std::string::npos)
      return true;
  }
  return false;
}

// "ERROR:  invalid resource name 'x'\nCONTEXT: …" → "invalid resource name 'x'".
std::string server_message(const std::string& what) {
  std::string line = what.substr(0, what.find('\n'));
  for (std::string_view severity : {"ERROR:", "FATAL:", "PANIC:"}) {
    if (line.starts_with(severity))
      line.erase(0, severity.size());
  }
  return one_line(line);
}

// The SQLSTATE of an error. libpqxx 6 leaves it empty for the classes it
// throws some errors as, so those are recognised by class.
std::string sqlstate_of(const pqxx::sql_error& error) {
  if (!error.sqlstate().empty())
    return error.sqlstate();
  if (dynamic_cast<const pqxx::insufficient_privilege*>(&error))
    return "42501";
  if (dynamic_cast<const pqxx::undefined_table*>(&error))
    return "42P01";
  if (dynamic_cast<const pqxx::undefined_function*>(&error))
    return "42883";
  return "";
}

// Replaces what libpq quotes from the connection string ("…"), which may be
// a piece of a password, for a malformed-string message.
std::string without_quotes(const std::string& text) {
  std::string out;
  bool quoted = false;
  for (char c : text) {
    if (c == '"') {
      out += quoted ? "...\"" : "\"";
      quoted = !quoted;
    } else if (!quoted) {
      out += c;
    }
  }
  return out;
}

// Thrown inside this file for a failure that a retry may overcome; guarded()
// retries it until the deadline, then throws it as clk::Error(unavailable).
class Trouble : public Error {
 public:
  using Error::Error;
};

// Until a caller sets a deadline: a one-shot command's patience.
constexpr seconds k_default_patience{10};

// The kinds of server trouble, each worded for what the operator can change.
enum class Kind { full, starting, read_only, down };

std::optional<Kind> trouble_of_state(const std::string& state) {
  if (state == "53300")
    return Kind::full;
  if (state == "57P03")
    return Kind::starting;
  if (state == "57P01" || state == "57P02")
    return Kind::down;
  if (state == "25006")
    return Kind::read_only;
  return std::nullopt;
}

// libpq reports a refused login as text only (no SQLSTATE before the session
// exists): recognised by the server's messages, which are the same words in
// every release this supports.
std::optional<Kind> trouble_in(const std::string& reason) {
  if (contains_any(reason,
                   {"too many clients", "remaining connection slots are reserved",
                    "too many connections for", "no more connections allowed", "sorry, too many"}))
    return Kind::full;
  if (contains_any(reason, {"is starting up", "is shutting down", "not yet accepting connections",
                            "is in recovery mode", "not accepting connections"}))
    return Kind::starting;
  if (contains_any(reason, {"session is read-only", "read-only transaction",
                            "could not make a writable connection", "is in hot standby mode",
                            "server is in hot standby"}))
    return Kind::read_only;
  if (contains_any(reason, {"Connection refused", "No such file or directory",
                            "server closed the connection", "Connection reset", "timeout expired",
                            "terminating connection", "cannot connect to server",
                            "server login has been failing", "could not receive data",
                            "could not send data", "no connection to the server"}))
    return Kind::down;
  return std::nullopt;
}

std::string in_trouble(Kind kind, const std::string& target, const std::string& reason) {
  switch (kind) {
    case Kind::full:
      return "PostgreSQL at " + target + " is full (" + reason +
             "): raise max_connections or the role's CONNECTION LIMIT, or put pgbouncer in front";
    case Kind::starting:
      return "PostgreSQL at " + target + " is starting up or shutting down (" + reason + ")";
    case Kind::read_only:
      return "PostgreSQL at " + target + " is read-only (" + reason +
             "): a standby, or a failover under way; list every host in the URL with "
             "target_session_attrs=read-write";
    case Kind::down:
      break;
  }
  // pgbouncer, after one refused login to the server (a restart), refuses
  // every client for server_login_retry, 15 s by default: longer than a
  // default job's lease rides out.
  if (reason.find("server login has been failing") != std::string::npos) {
    return "pgbouncer at " + target + " refuses clients after a failed login to PostgreSQL (" +
           reason +
           "): set server_login_retry = 1 in pgbouncer.ini (15 s by default) so that a job rides "
           "out a database restart";
  }
  return "cannot connect to PostgreSQL at " + target + ": " + reason +
         "; check that the server is up and reachable";
}

}  // namespace

struct Connection::Session {
  Session(const std::string& conninfo, std::optional<steady_clock::time_point> deadline)
      : conn(conninfo, deadline), notices(conn) {}
  BoundedConnection conn;
  NoticeLog notices;                         // declared after conn: destroyed before it
  std::unique_ptr<ChangeListener> listener;  // LISTENing since the first await()
  bool direct = false;                       // notifications reach us (not pooled)
};

Connection::Connection(std::string url, milliseconds connect_timeout)
    : m_url(std::move(url)),
      m_connect_timeout(connect_timeout),
      m_target(describe_target(m_url)),
      m_retry_until(steady_clock::now() + k_default_patience),
      m_timer(std::make_unique<StatementTimer>()) {}

Connection::~Connection() = default;

void Connection::drop() noexcept {
  m_session.reset();
}

void Connection::open() {
  try {
    session();
  } catch (const Trouble& trouble) {
    throw Error(ExitCode::unavailable, trouble.what());
  }
}

void Connection::set_deadline(steady_clock::time_point retry_until,
                              steady_clock::time_point answer_by) {
  m_retry_until = retry_until;
  m_answer_by = answer_by;
}

steady_clock::time_point Connection::statement_deadline() const {
  auto now = steady_clock::now();
  return now +
         std::min<steady_clock::duration>(m_statement_limit, std::max(m_answer_by, now) - now);
}

void Connection::close() noexcept {
  drop();
}

void Connection::close_if_idle(steady_clock::duration idle) noexcept {
  if (m_session && steady_clock::now() - m_last_used >= idle)
    drop();
}

bool Connection::is_open() const {
  return m_session && m_session->conn.is_open();
}

Connection::Session& Connection::session() {
  m_last_used = steady_clock::now();
  if (m_session && m_session->conn.is_open())
    return *m_session;
  m_session.reset();
  // libpq's connect_timeout bounds each host of the URL in whole seconds;
  // when the caller has less time left than that, the connect ends at the
  // caller's deadline instead (BoundedConnection), so a server that does not
  // answer cannot make a call overrun it.
  const auto deadline = statement_deadline();
  std::optional<steady_clock::time_point> connect_by;
  if (m_connect_timeout.count() <= 0 || deadline - steady_clock::now() < m_connect_timeout)
    connect_by = deadline;
  try {
    m_session = std::make_unique<Session>(with_defaults(m_url, m_connect_timeout), connect_by);
    return *m_session;
  } catch (const std::exception& e) {
    std::string reason = one_line(e.what());
    // A value libpq refuses before it connects (sslmode=bogus, an unknown
    // service, target_session_attrs=x, a bad port): no retry can help. What
    // it quotes is the value of the option it names, never a password.
    const bool bad_value = contains_any(
        reason, {"value: \"", "definition of service", "service file", "invalid port number",
                 "could not match", "protocol version range", "SSL support is not compiled in"});
    if (bad_value ||
        contains_any(reason, {"invalid connection option", "URI", "missing \"=\"",
                              "unterminated quoted", "percent-encoded", "invalid integer value",
                              "invalid value for", "unexpected spaces"})) {
      // libpq quotes the offending piece of a malformed string, which may be
      // part of a password ('missing "=" after "…"' for password=my secret):
      // hidden, but for an unknown option's name or a refused value.
      if (!bad_value && !contains_any(reason, {"invalid connection option"}))
        reason = without_quotes(reason);
      throw Error(ExitCode::config, "invalid PostgreSQL database URL '" +
                                        util::mask_passwords(m_url, util::Words::until_keyword) +
                                        "': " + reason);
    }
    if (auto kind = trouble_in(reason))
      throw Trouble(ExitCode::unavailable, in_trouble(*kind, m_target, reason));
    if (contains_any(reason, {"authentication failed", "pg_hba.conf", "does not exist",
                              "no password supplied", "permission denied", "SSL", "certificate"})) {
      throw Error(ExitCode::config,
                  "PostgreSQL at " + m_target + " refused the connection: " + reason +
                      (contains_any(reason, {"no password supplied"})
                           ? missing_password_hint(m_url)
                           : std::string("; check the database URL and credentials")));
    }
    throw Trouble(ExitCode::unavailable, in_trouble(Kind::down, m_target, reason));
  }
}

// One try of body(Session&), translating libpqxx's exceptions: Trouble for
// what a retry may overcome, clk::Error for the rest.
template <typename Body>
auto Connection::attempt(const std::string& op, Retry retry, Body& body, int& rollbacks) {
  auto lost = [&](const std::exception& e, bool timed_out) {
    std::string why =
        timed_out ? "no answer within " +
                        util::format_duration(duration_cast<milliseconds>(k_statement_limit)) +
                        " or the caller's deadline; a pooler such as pgbouncer "
                        "may be waiting for a server that is down"
        : contains_any(e.what(), {"client encoding"})
            ? "the server or a pooler before it closed the connection"
            : one_line(e.what());
    return "lost the connection to PostgreSQL at " + m_target + " during " + op + " (" + why + ")";
  };
  for (;;) {
    Session& s = session();
    ArmedTimer timer(*m_timer, s.conn.sock(), statement_deadline());
    try {
      if (test_fault::drop_request(op)) {
        // Test builds only: the connection breaks before the statement is sent.
        spdlog::warn("test fault: dropping the connection before {}", op);
        s.conn.disconnect();
        throw pqxx::broken_connection("test fault: connection dropped before " + op);
      }
      auto result = body(s);
      timer.disarm();
      if (test_fault::drop_reply(op)) {
        // Test builds only: the statement has committed; lose its reply.
        spdlog::warn("test fault: dropping the connection after {} committed", op);
        s.conn.disconnect();
        throw pqxx::broken_connection("test fault: connection dropped after " + op);
      }
      return result;
    } catch (const pqxx::broken_connection& e) {
      bool timed_out = timer.disarm();
      drop();
      if (retry == Retry::if_broken)
        throw Trouble(ExitCode::unavailable, lost(e, timed_out));
      throw OutcomeUnknown(
          ExitCode::unavailable,
          lost(e, timed_out) + "; whether it took effect is unknown: look with 'clock status'");
    } catch (const pqxx::statement_completion_unknown& e) {
      bool timed_out = timer.disarm();
      drop();
      if (retry == Retry::if_broken)
        throw Trouble(ExitCode::unavailable, lost(e, timed_out));
      throw OutcomeUnknown(
          ExitCode::unavailable,
          lost(e, timed_out) + "; whether it took effect is unknown: look with 'clock status'");
    } catch (const pqxx::transaction_rollback& e) {
      // A deadlock with another program's transaction, or a serialization
      // failure under its isolation level: rolled back, nothing took effect.
      if (++rollbacks < 3)
        continue;
      throw Error(ExitCode::unavailable, "PostgreSQL rolled back " + op + " three times (" +
                                             server_message(e.what()) + "); retry later");
    } catch (const pqxx::sql_error& e) {
      timer.disarm();
      const std::string state = sqlstate_of(e);
      std::string reason = server_message(e.what());
      if (!s.conn.is_open())
        drop();
      if (state == "22023")
        throw Error(ExitCode::usage, reason);  // the functions' own checks
      if (state == "42501") {
        throw Error(ExitCode::config,
                    "PostgreSQL refused " + op + ": " + reason +
                        "; the database role needs the grants of sql/postgres/roles.sql "
                        "(clock_app to lock, clock_operator for --force and gc)");
      }
      if (state == "55P03" || state == "57014") {
        throw HierarchyBusy(
            op + " timed out waiting for another transaction on the same resources (" + reason +
                "): a row lock of clock's own table hierarchy_locks, which only clock's "
                "functions take, held by a session that called them inside an open "
                "transaction; look for it in pg_stat_activity ('idle in transaction'), then "
                "retry",
            "look for it in pg_stat_activity ('idle in transaction')");
      }
      // The server answered with an error: the statement was rolled back,
      // so it may be sent again whatever `retry` says.
      std::optional<Kind> kind = trouble_of_state(state);
      if (!kind)
        kind = trouble_in(reason);
      if (kind) {
        drop();  // a standby stays one: the next connection may reach the primary
        throw Trouble(ExitCode::unavailable, in_trouble(*kind, m_target, reason));
      }
      if (state.starts_with("08") || state.starts_with("53")) {
        drop();
        throw Trouble(ExitCode::unavailable,
                      "PostgreSQL at " + m_target + " failed during " + op + ": " + reason);
      }
      if (state == "42P01" || state == "42883" || state == "3F000") {
        throw Error(ExitCode::config,
                    "the clock schema is missing or incomplete (" + reason + "): run 'clock init'");
      }
      throw Error(ExitCode::internal, "PostgreSQL failed during " + op + ": " + reason);
    }
  }
}

template <typename Body>
auto Connection::guarded(std::string_view what, Retry retry, Body&& body) {
  const std::string op(what);
  server::TroubleRetry patience(m_retry_until);
  int rollbacks = 0;
  for (;;) {
    try {
      return attempt(op, retry, body, rollbacks);
    } catch (const Trouble& e) {
      patience.wait_or_give_up(e.what(), op);
    }
  }
}

std::string Connection::call(std::string_view what, const std::string& sql, const Params& params,
                             Retry retry) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& param : params)
    values.push_back(param ? param->c_str() : nullptr);
  return guarded(what, retry, [&](Session& s) {
    pqxx::nontransaction tx(s.conn);
    pqxx::result result = tx.exec_params(sql, pqxx::prepare::make_dynamic_params(values));
    if (result.size() != 1 || result.columns() != 1) {
      throw Error(ExitCode::internal, std::string(what) + ": expected one value from PostgreSQL");
    }
    return std::string(result[0][0].is_null() ? "" : result[0][0].c_str());
  });
}

std::optional<std::string> Connection::call_if_exists(std::string_view what, const std::string& sql,
                                                      const Params& params, Retry retry) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& param : params)
    values.push_back(param ? param->c_str() : nullptr);
  return guarded(what, retry, [&](Session& s) -> std::optional<std::string> {
    pqxx::result result;
    try {
      pqxx::nontransaction tx(s.conn);
      result = tx.exec_params(sql, pqxx::prepare::make_dynamic_params(values));
    } catch (const pqxx::sql_error& e) {
      if (is_missing_schema(sqlstate_of(e)) && s.conn.is_open())
        return std::nullopt;
      throw;
    }
    if (result.size() != 1 || result.columns() != 1) {
      throw Error(ExitCode::internal, std::string(what) + ": expected one value from PostgreSQL");
    }
    if (result[0][0].is_null())
      return std::nullopt;
    return std::string(result[0][0].c_str());
  });
}

namespace {

class PqxxRow final : public RowView {
 public:
  explicit PqxxRow(const pqxx::row& row) : m_row(row) {}
  const char* at(int column) const override {
    auto field = m_row[column];
    return field.is_null() ? nullptr : field.c_str();
  }

 private:
  const pqxx::row& m_row;
};

}  // namespace

std::optional<std::size_t> Connection::each_row(std::string_view what, const std::string& sql,
                                                const Params& params, Retry retry,
                                                const std::function<void(const RowView&)>& visit) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& param : params)
    values.push_back(param ? param->c_str() : nullptr);
  auto result = guarded(what, retry, [&](Session& s) -> std::optional<pqxx::result> {
    try {
      pqxx::nontransaction tx(s.conn);
      return tx.exec_params(sql, pqxx::prepare::make_dynamic_params(values));
    } catch (const pqxx::sql_error& e) {
      if (is_missing_schema(sqlstate_of(e)) && s.conn.is_open())
        return std::nullopt;
      throw;
    }
  });
  if (!result)
    return std::nullopt;
  for (const auto& row : *result)
    visit(PqxxRow(row));
  return result->size();
}

void Connection::run_migrations(const std::string& script) {
  // A migration may wait for another process's (under the migration lock).
  struct Restore {
    Connection& conn;
    steady_clock::time_point answer_by;
    ~Restore() {
      conn.m_answer_by = answer_by;
      conn.m_statement_limit = k_statement_limit;
    }
  } restore{*this, m_answer_by};
  m_answer_by = std::max(m_answer_by, steady_clock::now() + minutes(1));
  m_statement_limit = minutes(1);
  try {
    guarded("the schema migration", Retry::never, [&](Session& s) {
      try {
        pqxx::nontransaction tx(s.conn);
        tx.exec(script);
      } catch (const pqxx::insufficient_privilege& e) {
        throw Error(ExitCode::config,
                    "the clock schema is missing or out of date, and this database role may not "
                    "create it (" +
                        server_message(e.what()) +
                        "): run 'clock init' of clock " CLOCK_VERSION
                        " as the "
                        "schema's owner, or have a database administrator apply the output of "
                        "'clock init --print-sql'");
      }
      return 0;
    });
  } catch (...) {
    drop();
    throw;
  }
}

void Connection::listen(Session& s, const std::string& channel, steady_clock::time_point until) {
  ArmedTimer timer(*m_timer, s.conn.sock(), std::min(until, statement_deadline()));
  s.listener = std::make_unique<ChangeListener>(s.conn, channel);
  // Through pgbouncer (transaction mode) the backend that ran LISTEN is
  // not ours: its pid differs from the one the pooler gave the client.
  pqxx::nontransaction tx(s.conn);
  s.direct = tx.exec("SELECT pg_backend_pid()").at(0).at(0).as<int>() == s.conn.backendpid();
}

void Connection::await(const std::string& channel, const std::string& wanted,
                       steady_clock::duration timeout) {
  const auto until = steady_clock::now() + timeout;
  try {
    Session& s = session();
    if (!s.listener) {
      listen(s, channel, until);
      return;
    }
    s.listener->wanted = wanted;
    s.listener->woken = false;
    for (;;) {
      auto left = duration_cast<microseconds>(until - steady_clock::now()).count();
      if (s.listener->woken) {
        // Any login may NOTIFY this channel, as often as it likes: however
        // many notifications come, the waiter looks again at most once per
        // k_notified_recheck. A release wakes each head once, so this
        // changes nothing for a queue that moves.
        std::this_thread::sleep_until(std::min(until, m_last_woken + k_notified_recheck));
        m_last_woken = steady_clock::now();
        m_await_backoff.reset();
        return;
      }
      if (left <= 0) {
        m_await_backoff.reset();
        return;
      }
      s.conn.await_notification(left / 1'000'000, left % 1'000'000);
    }
  } catch (const Error& e) {
    spdlog::debug("waiting without PostgreSQL: {}", e.what());
  } catch (const std::exception& e) {
    spdlog::debug("lost the PostgreSQL connection while waiting: {}", one_line(e.what()));
    drop();
  }
  // Not the rest of the timeout: after a restart or failover the release
  // that frees the lock may come within it, and nobody would notify this
  // waiter of it (its LISTEN went with the connection).
  std::this_thread::sleep_until(std::min(until, steady_clock::now() + m_await_backoff.next()));
}

bool Connection::take_notification(const std::string& channel, const std::string& wanted) {
  Session& s = session();  // throws when the server cannot be reached
  try {
    if (!s.listener) {
      listen(s, channel, statement_deadline());
      s.listener->wanted = wanted;
      return true;  // what happened before the LISTEN is not known
    }
    s.listener->wanted = wanted;
    s.conn.get_notifs();
    return std::exchange(s.listener->woken, false);
  } catch (const std::exception& e) {
    spdlog::debug("lost the PostgreSQL connection that listens for {}: {}", channel,
                  one_line(e.what()));
    drop();
    return true;  // a notification may have been lost with it
  }
}

bool Connection::notified_directly() const {
  return m_session && m_session->listener && m_session->direct;
}

bool Connection::listening() const {
  return m_session && m_session->listener;
}

}  // namespace clk::store::postgres
