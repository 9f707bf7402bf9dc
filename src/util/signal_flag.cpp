// Signal-to-flag handling: the handler only stores the signal number.
#include "util/signal_flag.hpp"

#include <csignal>
#include <cstdlib>

namespace clk::util {

namespace {

volatile std::sig_atomic_t g_caught = 0;
constexpr int k_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

extern "C" void remember_signal(int signal) {
  g_caught = signal;
}

}  // namespace

SignalFlag::SignalFlag() {
  g_caught = 0;
  struct sigaction action {};
  action.sa_handler = remember_signal;
  sigemptyset(&action.sa_mask);
  for (int signal : k_signals)
    sigaction(signal, &action, nullptr);
}

SignalFlag::~SignalFlag() {
  for (int signal : k_signals)
    std::signal(signal, SIG_DFL);
}

int SignalFlag::caught() const {
  return g_caught;
}

void SignalFlag::die_of_caught_signal() const {
  int signal = g_caught ? g_caught : SIGTERM;
  std::signal(signal, SIG_DFL);
  std::raise(signal);
  std::_Exit(128 + signal);
}

}  // namespace clk::util
