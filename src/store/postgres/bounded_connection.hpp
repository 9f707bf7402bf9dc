// A libpqxx connection whose connect can end at a deadline of clock's own.
//
// libpq's connect_timeout counts whole seconds, at least two, and applies to
// each host of a multi-host URL in turn: a caller with less than that left
// (the end of `-w D`, a server that silently drops packets) would wait past
// its deadline. With a deadline, the connection is made with libpq's
// non-blocking calls (PQconnectStart, PQconnectPoll) and given up at the
// deadline, to the millisecond, with libpq's own "timeout expired"; without
// one, libpq connects as pqxx::connection does, each host under
// connect_timeout.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include <pqxx/pqxx>

namespace clk::store::postgres {

class BoundedConnection final : public pqxx::connection_base {
 public:
  // Connects before it returns, or throws pqxx::broken_connection.
  BoundedConnection(const std::string& conninfo,
                    std::optional<std::chrono::steady_clock::time_point> deadline);
  ~BoundedConnection() noexcept { close(); }
  BoundedConnection(const BoundedConnection&) = delete;
  BoundedConnection& operator=(const BoundedConnection&) = delete;

 private:
  // libpqxx asks its connection policy for the libpq handle.
  class Policy final : public pqxx::connectionpolicy {
   public:
    Policy(const std::string& conninfo,
           std::optional<std::chrono::steady_clock::time_point> deadline)
        : pqxx::connectionpolicy(conninfo), m_deadline(deadline) {}
    handle do_startconnect(handle orig) override;

   private:
    // For the first connect only: libpqxx reconnecting a broken connection
    // later (it does so for a new transaction) connects as libpq does.
    std::optional<std::chrono::steady_clock::time_point> m_deadline;
  };

  // Initialised after the base, which only keeps a reference to it until
  // init() runs in the constructor's body (as in pqxx::basic_connection_base).
  Policy m_policy;
};

}  // namespace clk::store::postgres
