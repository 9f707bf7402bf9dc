// Tells the operator, on stderr, who holds the lock while clock waits: one
// updating line on a terminal, a plain log line every so often otherwise.
#pragma once

#include <chrono>
#include <string>

#include "store/waiting.hpp"

namespace clk::output {

class WaitReporter final : public store::WaitObserver {
 public:
  // `quiet` suppresses everything (-q).
  explicit WaitReporter(bool quiet);

  void blocked(const store::Attempt& attempt, std::chrono::milliseconds waited) override;
  std::chrono::steady_clock::time_point next_report() const override;
  void finished() override;

 private:
  bool m_quiet;
  bool m_terminal;
  bool m_line_shown = false;
  std::chrono::steady_clock::time_point m_next_report;
  std::string m_last_blocker;  // who was in the way at the last line (no times)
};

}  // namespace clk::output
