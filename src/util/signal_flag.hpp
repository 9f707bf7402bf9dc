// Turns termination signals into a flag that a loop can poll, for the time a
// process must clean up before it dies (leaving the wait queue).
#pragma once

namespace clk::util {

class SignalFlag {
 public:
  // Catches SIGINT, SIGTERM, SIGHUP and SIGQUIT until destroyed.
  SignalFlag();
  ~SignalFlag();
  SignalFlag(const SignalFlag&) = delete;
  SignalFlag& operator=(const SignalFlag&) = delete;

  // The signal caught, or 0.
  int caught() const;
  // Restores the default action and re-sends the caught signal to this process,
  // so the exit status says which signal ended it (128+N in a shell).
  [[noreturn]] void die_of_caught_signal() const;
};

}  // namespace clk::util
