// See bounded_connection.hpp. The loop is the one libpq's documentation of
// PQconnectPoll gives: wait for the socket as the last poll asked (writable
// first), then poll again; the socket may change between polls (another
// address or host of the URL, a retry without SSL), so it is asked each time.
#include "store/postgres/bounded_connection.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <libpq-fe.h>
#include <new>
#include <poll.h>
#include <string>

namespace clk::store::postgres {

using namespace std::chrono;

namespace {

// As libpq words its own connect_timeout, after what the URL's earlier hosts
// met, if anything.
std::string timed_out(PGconn* conn) {
  std::string earlier = PQerrorMessage(conn);
  std::string host = PQhost(conn) ? PQhost(conn) : "";
  std::string port = PQport(conn) ? PQport(conn) : "";
  std::string server = !host.empty() && host.front() == '/'
                           ? "on socket \"" + host + "/.s.PGSQL." + port + "\""
                           : "at \"" + host + "\", port " + port;
  return earlier + "connection to server " + server + " failed: timeout expired";
}

}  // namespace

BoundedConnection::BoundedConnection(const std::string& conninfo,
                                     std::optional<steady_clock::time_point> deadline)
    : pqxx::connection_base(m_policy), m_policy(conninfo, deadline) {
  init();
}

BoundedConnection::Policy::handle BoundedConnection::Policy::do_startconnect(handle orig) {
  if (orig)
    return orig;
  if (!m_deadline)
    return normalconnect(orig);
  const auto deadline = *m_deadline;
  m_deadline.reset();

  PGconn* conn = PQconnectStart(options().c_str());
  if (!conn)
    throw std::bad_alloc{};
  auto give_up = [conn](const std::string& why) {
    PQfinish(conn);
    throw pqxx::broken_connection{why};
  };
  if (PQstatus(conn) == CONNECTION_BAD)
    give_up(PQerrorMessage(conn));
  PostgresPollingStatusType polled = PGRES_POLLING_WRITING;
  while (polled != PGRES_POLLING_OK) {
    if (polled == PGRES_POLLING_FAILED)
      give_up(PQerrorMessage(conn));
    auto left = duration_cast<milliseconds>(deadline - steady_clock::now()).count();
    if (left <= 0)
      give_up(timed_out(conn));
    pollfd socket{PQsocket(conn), polled == PGRES_POLLING_READING ? short{POLLIN} : short{POLLOUT},
                  0};
    int ready = ::poll(&socket, 1, static_cast<int>(std::min<long long>(left, 60'000)));
    if (ready < 0 && errno != EINTR)
      give_up(std::string("waiting for the server: ") + std::strerror(errno));
    if (ready > 0)
      polled = PQconnectPoll(conn);
  }
  return conn;
}

}  // namespace clk::store::postgres
