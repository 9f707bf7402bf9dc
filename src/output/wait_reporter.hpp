// Tells the operator, on stderr, who holds the lock while clock waits: one
// updating line on a terminal; elsewhere (cron, a log file) nothing for a
// normal wait and a plain line only once the wait is long, so that cron mails
// only trouble.
#pragma once

#include <chrono>
#include <string>

#include "store/waiting.hpp"

namespace clk::output {

// How much of a wait to show: -q, the default, -v.
enum class WaitVerbosity { quiet, normal, verbose };

// Off a terminal at default verbosity, a wait shorter than this prints
// nothing (cron mails whatever a job writes to stderr).
inline constexpr std::chrono::seconds k_long_wait{60};

class WaitReporter final : public store::WaitObserver {
 public:
  explicit WaitReporter(WaitVerbosity verbosity);

  void blocked(const store::Attempt& attempt, std::chrono::milliseconds waited) override;
  std::chrono::steady_clock::time_point next_report() const override;
  void finished() override;

 private:
  WaitVerbosity m_verbosity;
  bool m_terminal;
  bool m_line_shown = false;
  std::chrono::steady_clock::time_point m_next_report;
  std::string m_last_blocker;  // who was in the way at the last line (no times)
};

}  // namespace clk::output
