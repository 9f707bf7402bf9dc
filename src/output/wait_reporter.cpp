// Progress of a wait on stderr.
#include "output/wait_reporter.hpp"

#include <cstdio>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "output/text.hpp"
#include "util/duration.hpp"

namespace clk::output {

using namespace std::chrono;

namespace {
constexpr auto k_first_report = seconds(1);       // "longer than a moment": the live line, -v
constexpr auto k_verbose_interval = seconds(30);  // plain lines with -v off a terminal
constexpr auto k_long_interval = minutes(10);     // plain lines of a long wait, default
constexpr auto k_tty_interval = milliseconds(250);

// Who is in the way, without the times that grow on every attempt: a new
// holder or queue head is news worth a line at once, the same one a second
// later is not.
std::string blocker_identity(const store::Attempt& attempt) {
  if (!attempt.blocking_leases.empty()) {
    const auto& lease = attempt.blocking_leases.front();
    return "lease " + lease.owner.str() + " " + lease.resource.str() + " " +
           std::to_string(lease.token) + " +" + std::to_string(attempt.blocking_leases.size());
  }
  if (!attempt.blocking_waiters.empty()) {
    const auto& waiter = attempt.blocking_waiters.front();
    return "waiter " + waiter.owner.str() + " " + waiter.resource.str() + " +" +
           std::to_string(attempt.blocking_waiters.size());
  }
  return "other";
}

bool stderr_is_terminal() {
  const char* term = std::getenv("TERM");
  return isatty(STDERR_FILENO) == 1 && term != nullptr && std::string_view(term) != "dumb";
}
}  // namespace

// A terminal shows the live line after a moment; elsewhere a normal wait is
// silent unless -v asks for it, and a long one is trouble worth a line.
WaitReporter::WaitReporter(WaitVerbosity verbosity)
    : m_verbosity(verbosity),
      m_terminal(stderr_is_terminal()),
      m_next_report(steady_clock::now() + (m_terminal || verbosity == WaitVerbosity::verbose
                                               ? steady_clock::duration(k_first_report)
                                               : steady_clock::duration(k_long_wait))) {}

void WaitReporter::blocked(const store::Attempt& attempt, milliseconds waited) {
  if (m_verbosity == WaitVerbosity::quiet)
    return;
  auto now = steady_clock::now();
  auto identity = blocker_identity(attempt);
  bool changed = identity != m_last_blocker;
  if (now < m_next_report && !(changed && m_line_shown))
    return;
  m_last_blocker = identity;
  auto blocker = escape_for_terminal(store::describe_blockers(attempt, system_clock::now()));
  if (m_terminal) {
    std::fprintf(stderr, "\r\033[Kclock: waiting %s: %s", util::format_duration(waited).c_str(),
                 blocker.c_str());
    std::fflush(stderr);
    m_line_shown = true;
    m_next_report = now + k_tty_interval;
  } else if (m_verbosity == WaitVerbosity::verbose) {
    spdlog::info("waiting {}: {}", util::format_duration(waited), blocker);
    m_line_shown = true;
    m_next_report = now + k_verbose_interval;
  } else {
    spdlog::warn("waiting {}: {}", util::format_duration(waited), blocker);
    m_line_shown = true;
    m_next_report = now + k_long_interval;
  }
}

steady_clock::time_point WaitReporter::next_report() const {
  return m_verbosity == WaitVerbosity::quiet ? steady_clock::time_point::max() : m_next_report;
}

void WaitReporter::finished() {
  if (m_terminal && m_line_shown) {
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
  }
}

}  // namespace clk::output
