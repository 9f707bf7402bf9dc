// How a PostgreSQL holder learns within a second that its lease was taken
// (forced release, expiry) without asking the server every second: one
// connection LISTENs on the schema's lease-loss channel, to which the SQL
// functions that remove someone else's lease send the owner's id
// (notify_lost in sql/postgres/functions/10_util.sql). Only when a
// notification names this owner, or the watch cannot tell (it just began, its
// connection broke), does the holder read its lease.
//
// It holds a server connection for the whole run, so it is opt-in (clock run
// --watch-lease, [postgres] watch_lease): by default connections are borrowed
// (man clock, COMMANDS) and a loss is found at the next renewal. Through a pooler in
// transaction mode notifications do not arrive; the watch then stops and
// says so.
#pragma once

#include <chrono>
#include <string>

#include "store/postgres/connection.hpp"
#include "util/backoff.hpp"

namespace clk::store::postgres {

class LeaseWatch {
 public:
  LeaseWatch(std::string url, std::chrono::milliseconds connect_timeout, std::string channel);

  // Whether `owner` may have lost a lease since the last call, so that the
  // caller must read it: true on the first call of each connection (what
  // came before its LISTEN is not known), after a notification naming
  // `owner`, and when the connection broke; false when nothing was heard,
  // and while no connection can be opened (tried again at a growing
  // interval; the renewals go on meanwhile and find a loss). Never throws;
  // takes at most about a second.
  bool may_have_lost(const std::string& owner);

 private:
  Connection m_connection;
  std::string m_channel;
  bool m_working = true;    // false through a pooler: notifications cannot arrive
  bool m_listened = false;  // it has said that it listens
  util::Backoff m_reconnect;
  std::chrono::steady_clock::time_point m_next_try{};
};

}  // namespace clk::store::postgres
