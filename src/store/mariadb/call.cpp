// Connection::call (connection.hpp): one prepared statement sent until it
// succeeds or the deadline passes (server/trouble_retry.hpp, as PostgreSQL's
// Connection::guarded), for MariaDB's error classes.
#include "store/mariadb/connection.hpp"
#include "store/server/trouble_retry.hpp"

namespace clk::store::mariadb {

using std::chrono::steady_clock;

void Connection::set_deadline(steady_clock::time_point retry_until) {
  m_retry_until = retry_until;
}

std::vector<Row> Connection::call(std::string_view what, const std::string& sql,
                                  const Params& params, Resend resend) {
  server::TroubleRetry patience(m_retry_until.value_or(steady_clock::now() + k_default_patience));
  for (;;) {
    std::string trouble;  // why this attempt failed, when another may succeed
    bool sent = false;
    try {
      Statement& statement = kept(what, sql);
      sent = true;
      return statement.query(params);
    } catch (const ServerTrouble& e) {
      m_kept.reset();
      // Unavailable: fail() closed the connection, the next attempt opens a
      // new one, on the next host of the URL (a node lost, not ready or cut
      // off from its cluster). Retry: InnoDB (1213) or the procedure's exit
      // handler (1205) rolled the transaction back, and the session is as it
      // was.
      if (e.kind() != Trouble::unavailable && e.kind() != Trouble::retry)
        throw;
      if (e.kind() == Trouble::unavailable && sent && resend == Resend::if_unsent &&
          !e.took_no_effect()) {
        throw OutcomeUnknown(std::string(e.what()) + " while " + std::string(what) +
                             " ran: whether it took effect is unknown");
      }
      trouble = e.what();
    } catch (...) {
      m_kept.reset();  // it may have results unread
      throw;
    }
    patience.wait_or_give_up(trouble, what);
  }
}

Statement& Connection::kept(std::string_view what, const std::string& sql) {
  open();
  if (m_kept && m_kept->sql == sql) {
    m_kept->statement.m_what = what;
    return m_kept->statement;
  }
  m_kept.reset();  // its handle closed on the server before the next is prepared
  m_kept = std::make_unique<KeptStatement>(KeptStatement{sql, prepare(what, sql)});
  return m_kept->statement;
}

}  // namespace clk::store::mariadb
