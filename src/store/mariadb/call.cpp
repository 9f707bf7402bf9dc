// Connection::call (connection.hpp): one prepared statement sent until it
// succeeds or the deadline passes, the retry loop of PostgreSQL's
// Connection::guarded (src/store/postgres/connection.cpp) for MariaDB's
// error classes.
#include <thread>

#include <spdlog/spdlog.h>

#include "store/mariadb/connection.hpp"
#include "store/store.hpp"
#include "util/backoff.hpp"
#include "util/duration.hpp"

namespace clk::store::mariadb {

namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

// The least time worth a last try before a deadline.
constexpr milliseconds k_last_try{100};

}  // namespace

void Connection::set_deadline(steady_clock::time_point retry_until) {
  m_retry_until = retry_until;
}

std::vector<Row> Connection::call(std::string_view what, const std::string& sql,
                                  const Params& params, Resend resend) {
  const auto began = steady_clock::now();
  const auto retry_until = m_retry_until.value_or(began + k_default_patience);
  util::Backoff backoff;
  int retries = 0;
  bool warned = false;
  for (;;) {
    std::string trouble;  // why this attempt failed, when another may succeed
    bool sent = false;
    try {
      open();
      Statement statement = prepare(what, sql);
      sent = true;
      return statement.query(params);
    } catch (const ServerTrouble& e) {
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
    }
    auto now = steady_clock::now();
    // A last try comes just before the deadline, not a back-off step early.
    auto left = retry_until - now;
    if (left <= k_last_try) {
      if (retries == 0)
        throw Error(ExitCode::unavailable, trouble);
      throw Error(ExitCode::unavailable,
                  trouble + " (gave up after trying for " +
                      util::format_duration(duration_cast<milliseconds>(now - began)) + ")");
    }
    auto delay = std::min<steady_clock::duration>(backoff.next(), left - k_last_try);
    ++retries;
    if (!warned && now - began >= k_long_trouble) {
      spdlog::warn("{}; still trying", trouble);
      warned = true;
    } else {
      spdlog::debug("{}; retrying {} in {}", trouble, what,
                    util::format_duration(duration_cast<milliseconds>(delay)));
    }
    std::this_thread::sleep_for(delay);
  }
}

}  // namespace clk::store::mariadb
