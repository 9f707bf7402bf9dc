// See lease_watch.hpp.
#include "store/postgres/lease_watch.hpp"

#include <spdlog/spdlog.h>

#include "error.hpp"

namespace clk::store::postgres {

using namespace std::chrono;

namespace {
// What one look may take: the heartbeat thread that asks also renews.
constexpr milliseconds k_look_limit{1'000};
}  // namespace

LeaseWatch::LeaseWatch(std::string url, milliseconds connect_timeout, std::string channel)
    : m_connection(std::move(url), connect_timeout), m_channel(std::move(channel)) {}

bool LeaseWatch::may_have_lost(const std::string& owner) {
  if (!m_working)
    return false;
  auto now = steady_clock::now();
  if (now < m_next_try)
    return false;  // the last look found no server: the renewals go on meanwhile
  try {
    m_connection.set_deadline(now, now + k_look_limit);
    bool heard = m_connection.take_notification(m_channel, owner);
    if (m_connection.listening() && !m_connection.notified_directly()) {
      spdlog::info(
          "--watch-lease: notifications do not come through this connection (a pooler such as "
          "pgbouncer in transaction mode); a lost lease is found at the next renewal");
      m_working = false;
      m_connection.close();
      return false;
    }
    if (m_connection.listening()) {
      if (!m_listened)
        spdlog::info("--watch-lease: listening for the loss of the lease");
      m_listened = true;
      m_reconnect.reset();
    }
    return heard;
  } catch (const Error& error) {
    spdlog::debug("--watch-lease cannot listen now: {}", error.what());
    m_next_try = steady_clock::now() + m_reconnect.next();
    return false;
  }
}

}  // namespace clk::store::postgres
