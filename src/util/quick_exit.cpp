#include "util/quick_exit.hpp"

#include <cstdio>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "util/sanitizers.hpp"

namespace clk::util {

void quick_exit_if_possible(int status) {
#if CLOCK_SANITIZED
  (void)status;
#else
  spdlog::default_logger_raw()->flush();
  std::fflush(nullptr);
  ::_exit(status);
#endif
}

}  // namespace clk::util
