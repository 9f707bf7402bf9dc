// clock run --jitter: a random delay before the first attempt.
#pragma once

#include <chrono>

namespace clk::run {

// Sleeps a random part of `span` ([0, span)), saying so at info level, so that
// a fleet's cron burst at :00 reaches the database spread out. A termination
// signal ends it, and clock of that signal, within 100 ms: nothing is held
// yet. Nothing for a span of 0 or less.
void wait_jitter(std::chrono::milliseconds span);

}  // namespace clk::run
