// See file_size_signal.hpp.
#include "util/file_size_signal.hpp"

#include <csignal>

namespace clk::util {

namespace {

struct sigaction g_inherited {};
bool g_saved = false;

}  // namespace

void ignore_file_size_signal() {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  g_saved = sigaction(SIGXFSZ, &ignore, &g_inherited) == 0;
}

void restore_file_size_signal() {
  if (g_saved)
    sigaction(SIGXFSZ, &g_inherited, nullptr);
}

}  // namespace clk::util
