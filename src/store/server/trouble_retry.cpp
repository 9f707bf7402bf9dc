// See trouble_retry.hpp.
#include "store/server/trouble_retry.hpp"

#include <algorithm>
#include <thread>

#include <spdlog/spdlog.h>

#include "error.hpp"
#include "store/store.hpp"
#include "util/duration.hpp"

namespace clk::store::server {

using namespace std::chrono;

namespace {

// The least time worth a last try before a deadline.
constexpr milliseconds k_last_try{100};

}  // namespace

TroubleRetry::TroubleRetry(Clock::time_point until) : m_began(Clock::now()), m_until(until) {}

void TroubleRetry::wait_or_give_up(const std::string& trouble, std::string_view what) {
  auto now = Clock::now();
  // A last try comes just before the deadline, not a back-off step early.
  auto left = m_until - now;
  if (left <= k_last_try) {
    if (m_retries == 0)
      throw Error(ExitCode::unavailable, trouble);
    throw Error(ExitCode::unavailable,
                trouble + " (gave up after trying for " +
                    util::format_duration(duration_cast<milliseconds>(now - m_began)) + ")");
  }
  auto delay = std::min<Clock::duration>(m_backoff.next(), left - k_last_try);
  ++m_retries;
  if (!m_warned && now - m_began >= k_long_trouble) {
    spdlog::warn("{}; still trying", trouble);
    m_warned = true;
  } else {
    spdlog::debug("{}; retrying {} in {}", trouble, what,
                  util::format_duration(duration_cast<milliseconds>(delay)));
  }
  std::this_thread::sleep_for(delay);
}

}  // namespace clk::store::server
