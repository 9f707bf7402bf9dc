// libpqxx behind Connection: opening with clock's defaults, running one
// statement per call, LISTEN, and turning libpqxx's exceptions into
// clk::Error where they are understood.
#include "store/postgres/connection.hpp"

#include <initializer_list>
#include <thread>

#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

#include "error.hpp"
#include "store/postgres/conninfo.hpp"
#include "store/postgres/test_fault.hpp"
#include "util/password.hpp"

namespace clk::store::postgres {

using namespace std::chrono;

namespace {

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

}  // namespace

struct Connection::Session {
  explicit Session(const std::string& conninfo) : conn(conninfo), notices(conn) {}
  pqxx::connection conn;
  NoticeLog notices;                         // declared after conn: destroyed before it
  std::unique_ptr<ChangeListener> listener;  // LISTENing since the first await()
  bool direct = false;                       // notifications reach us (not pooled)
};

Connection::Connection(std::string url, milliseconds connect_timeout)
    : m_url(std::move(url)),
      m_conninfo(with_defaults(m_url, connect_timeout)),
      m_target(describe_target(m_url)) {}

Connection::~Connection() = default;

void Connection::drop() noexcept {
  m_session.reset();
}

void Connection::open() {
  session();
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
  try {
    m_session = std::make_unique<Session>(m_conninfo);
    return *m_session;
  } catch (const std::exception& e) {
    std::string reason = one_line(e.what());
    if (contains_any(reason, {"invalid connection option", "URI", "missing \"=\"",
                              "unterminated quoted", "percent-encoded", "invalid integer value",
                              "invalid value for", "unexpected spaces"})) {
      // libpq quotes the offending piece of a malformed string, which may be
      // part of a password ('missing "=" after "…"' for password=my secret):
      // hidden, but for an unknown option's name, which is worth showing.
      if (!contains_any(reason, {"invalid connection option"}))
        reason = without_quotes(reason);
      throw Error(ExitCode::config, "invalid PostgreSQL database URL '" +
                                        util::mask_passwords(m_url, util::Words::until_keyword) +
                                        "': " + reason);
    }
    if (contains_any(reason, {"authentication failed", "pg_hba.conf", "does not exist",
                              "no password supplied", "permission denied", "SSL", "certificate"})) {
      throw Error(ExitCode::config, "PostgreSQL at " + m_target + " refused the connection: " +
                                        reason + "; check the database URL and credentials");
    }
    throw Error(ExitCode::unavailable, "cannot connect to PostgreSQL at " + m_target + ": " +
                                           reason + "; check that the server is up and reachable");
  }
}

template <typename Body>
auto Connection::guarded(std::string_view what, Retry retry, Body&& body) {
  const std::string op(what);
  auto lost = [&](const std::exception& e) {
    return Error(ExitCode::unavailable, "lost the connection to PostgreSQL at " + m_target +
                                            " during " + op + " (" + one_line(e.what()) +
                                            "); whether it took effect is unknown: retry, or look "
                                            "with 'clock status'");
  };
  for (int attempt = 1;; ++attempt) {
    Session& s = session();
    try {
      auto result = body(s);
      if (attempt == 1 && test_fault::drop_reply(op)) {
        // Test builds only: the statement has committed; lose its reply.
        spdlog::warn("test fault: dropping the connection after {} committed", op);
        s.conn.disconnect();
        throw pqxx::broken_connection("test fault: connection dropped after " + op);
      }
      return result;
    } catch (const pqxx::statement_completion_unknown& e) {
      drop();
      throw lost(e);
    } catch (const pqxx::broken_connection& e) {
      drop();
      if (retry == Retry::if_broken && attempt == 1) {
        spdlog::info("lost the connection to PostgreSQL during {}; retrying on a new one", op);
        continue;
      }
      throw lost(e);
    } catch (const pqxx::transaction_rollback& e) {
      // A deadlock with another program's transaction, or a serialization
      // failure under its isolation level: rolled back, nothing took effect.
      if (attempt < 3)
        continue;
      throw Error(ExitCode::unavailable, "PostgreSQL rolled back " + op + " three times (" +
                                             server_message(e.what()) + "); retry later");
    } catch (const pqxx::sql_error& e) {
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
            ExitCode::unavailable,
            op + " timed out waiting for another transaction on the same resources (" + reason +
                "); retry");
      }
      if (state == "25006") {
        throw Error(ExitCode::unavailable,
                    "PostgreSQL at " + m_target + " is a read-only standby (" + reason +
                        "): list the primary in the URL or add target_session_attrs=read-write");
      }
      if (state.starts_with("08") || state.starts_with("57P") || state.starts_with("53")) {
        drop();
        throw Error(ExitCode::unavailable, "PostgreSQL at " + m_target + " failed during " + op +
                                               ": " + reason + "; retry later");
      }
      if (state == "42P01" || state == "42883" || state == "3F000") {
        throw Error(ExitCode::config,
                    "the clock schema is missing or incomplete (" + reason + "): run 'clock init'");
      }
      throw Error(ExitCode::internal, "PostgreSQL failed during " + op + ": " + reason);
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
                        "): run 'clock init' as the "
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

void Connection::await(const std::string& channel, const std::string& wanted,
                       steady_clock::duration timeout) {
  const auto until = steady_clock::now() + timeout;
  try {
    Session& s = session();
    if (!s.listener) {
      s.listener = std::make_unique<ChangeListener>(s.conn, channel);
      // Through pgbouncer (transaction mode) the backend that ran LISTEN is
      // not ours: its pid differs from the one the pooler gave the client.
      pqxx::nontransaction tx(s.conn);
      s.direct = tx.exec("SELECT pg_backend_pid()").at(0).at(0).as<int>() == s.conn.backendpid();
      return;
    }
    s.listener->wanted = wanted;
    s.listener->woken = false;
    for (;;) {
      auto left = duration_cast<microseconds>(until - steady_clock::now()).count();
      if (left <= 0 || s.listener->woken)
        return;
      s.conn.await_notification(left / 1'000'000, left % 1'000'000);
    }
  } catch (const Error& e) {
    spdlog::debug("waiting without PostgreSQL: {}", e.what());
  } catch (const std::exception& e) {
    spdlog::debug("lost the PostgreSQL connection while waiting: {}", one_line(e.what()));
    drop();
  }
  std::this_thread::sleep_until(until);
}

bool Connection::notified_directly() const {
  return m_session && m_session->listener && m_session->direct;
}

bool Connection::listening() const {
  return m_session && m_session->listener;
}

}  // namespace clk::store::postgres
