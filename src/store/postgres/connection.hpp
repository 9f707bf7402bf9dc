// The one connection of a PostgreSQL session (session.hpp): opened with clock's defaults,
// reopened after it broke, and the only place that sees libpqxx. Its
// failures leave it as clk::Error: unavailable (69) for what a later call
// may overcome, config (78) for what the configuration must fix, usage (64)
// for arguments the SQL functions refuse, internal (70) for the rest.
//
// Server trouble is waited out, not fatal: a full server (53300: too many
// clients, slots reserved, too many connections for the role), one starting
// up or shutting down (57P03, 57P01), a read-only one (25006, or "session is
// read-only" from target_session_attrs: a standby, a failover under way), a
// refused or reset connection. A call retries them with jittered exponential
// back-off (util/backoff.hpp) until the deadline set_deadline() gives, and no
// statement outlives that deadline or k_statement_limit (statement_timer.hpp).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "error.hpp"
#include "store/postgres/statement_timer.hpp"
#include "store/server/row_view.hpp"
#include "store/server/session.hpp"
#include "util/backoff.hpp"

namespace clk::store::postgres {

using Params = std::vector<std::optional<std::string>>;  // nullopt: SQL NULL

// Whether a call may be sent again on a fresh connection after the first
// one broke with the outcome unknown: only for calls that take effect once
// however often they are sent.
enum class Retry { if_broken, never };

// The resources' hierarchy is locked by another open transaction (a program
// holding a clock lock inside its own transaction): for an acquire this means
// "held", not "backend unavailable". A call sent with Retry::never that lost
// its connection before the reply throws OutcomeUnknown: it may or may not
// have taken effect (the caller may look and send it again).
using server::HierarchyBusy;
using server::OutcomeUnknown;

// The longest one statement may go unanswered before it is abandoned (its
// connection dropped): every SQL function of clock answers within its
// lock_timeout (5 s) unless the server, or the pooler before it, is in trouble.
inline constexpr std::chrono::seconds k_statement_limit{10};

using store::RowView;

class Connection {
 public:
  Connection(std::string url, std::chrono::milliseconds connect_timeout);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Opens the connection unless it is open.
  void open();

  // Closes the connection; the next call opens a new one. A clock process
  // keeps a server connection only while it has statements to run (man clock, COMMANDS:
  // connections are borrowed, not held).
  void close() noexcept;

  // Closes the connection once no call has begun on it for `idle`.
  void close_if_idle(std::chrono::steady_clock::duration idle) noexcept;

  bool is_open() const;

  // The calls that follow retry server trouble until `retry_until` (none
  // starts after it; a call that cannot succeed before then throws
  // unavailable at once), and every statement is abandoned at `answer_by`
  // or after k_statement_limit, whichever is first.
  void set_deadline(std::chrono::steady_clock::time_point retry_until,
                    std::chrono::steady_clock::time_point answer_by);

  // Runs one statement with bound parameters (an unnamed statement, so it
  // works through pgbouncer in transaction mode) in its own implicit
  // transaction, and returns the text of the first column of its one row.
  // `what` names the operation in messages ("renew").
  std::string call(std::string_view what, const std::string& sql, const Params& params,
                   Retry retry);

  // Like call() but for a statement that may fail because the schema is
  // missing or out of date: returns nullopt then (undefined schema, table or
  // function), and when the statement's one value is NULL, instead of
  // throwing or returning "".
  std::optional<std::string> call_if_exists(std::string_view what, const std::string& sql,
                                            const Params& params, Retry retry);

  // Like call_if_exists() for a statement returning rows: visits each row
  // and returns how many there were, or nullopt when the schema is missing.
  std::optional<std::size_t> each_row(std::string_view what, const std::string& sql,
                                      const Params& params, Retry retry,
                                      const std::function<void(const RowView&)>& visit);

  // Runs the migration script (several statements, simple protocol). A role
  // that may not create what is missing gets clk::Error(config) pointing at
  // `clock init`: waiting and retrying (unavailable) would not help. On any
  // failure the connection is dropped: its session may be left inside the
  // script's aborted transaction.
  void run_migrations(const std::string& script);

  // Waits until a notification on `channel` whose payload is empty or
  // `wanted` arrives, or `timeout` passes; other notifications are consumed
  // and the wait goes on. The first call on a connection only LISTENs and
  // returns at once, so that the caller looks again before sleeping on a
  // change it could have missed. Never throws: a broken connection is dropped
  // (the next call reopens it) and a short, growing back-off slept away, so
  // the caller looks again soon after a restart or failover. Returns for a
  // notification at most once every 20 ms: one that comes sooner after the
  // last is answered 20 ms after it (docs/threat-model.md, "Notifications").
  void await(const std::string& channel, const std::string& wanted,
             std::chrono::steady_clock::duration timeout);

  // Whether a notification on `channel` with payload `wanted` (or empty) has
  // arrived since the last call, without waiting: also true at the first
  // call on a connection (it LISTENs then; what came before is not known)
  // and when the connection broke (it is dropped; the next call reopens it).
  // Throws clk::Error like call() when no connection can be opened.
  bool take_notification(const std::string& channel, const std::string& wanted);

  // Whether notifications reach this connection: it LISTENs, on the server
  // backend it talks to itself. Through a pooler in transaction mode
  // (pgbouncer) the LISTEN lands on a pooled backend and notifications are
  // lost, so a waiter must poll instead.
  bool notified_directly() const;

  // Whether the open connection LISTENs (await() has been called on it).
  bool listening() const;

 private:
  struct Session;
  Session& session();
  void drop() noexcept;
  // LISTENs on `channel`, noting whether notifications reach this client.
  void listen(Session& s, const std::string& channel, std::chrono::steady_clock::time_point until);
  std::chrono::steady_clock::time_point statement_deadline() const;
  // Runs body(Session&), translating libpqxx's exceptions (defined in the .cpp).
  template <typename Body>
  auto guarded(std::string_view what, Retry retry, Body&& body);
  template <typename Body>
  auto attempt(const std::string& op, Retry retry, Body& body, int& rollbacks);

  std::string m_url;
  std::chrono::milliseconds m_connect_timeout;
  std::string m_target;  // "host:port" for messages
  std::chrono::steady_clock::time_point m_retry_until;
  std::chrono::steady_clock::time_point m_answer_by = std::chrono::steady_clock::time_point::max();
  std::chrono::steady_clock::duration m_statement_limit = k_statement_limit;
  std::unique_ptr<StatementTimer> m_timer;
  std::unique_ptr<Session> m_session;
  // How long await() rests after it found no server, before its caller looks
  // again: growing while the server stays away, jittered so that a queue's
  // waiters cut off together by a restart or failover do not come back
  // together, and reset once a wait works.
  util::Backoff m_await_backoff;
  // When await() last returned for a notification: any login may NOTIFY
  // clock's channel, so a flood of them must not make a waiter look again
  // more often than every k_notified_recheck (connection.cpp).
  std::chrono::steady_clock::time_point m_last_woken;
  std::chrono::steady_clock::time_point m_last_used;  // the start of the last call
};

}  // namespace clk::store::postgres
