#include "util/quick_exit.hpp"

#include <cstdio>
#include <unistd.h>

#include <spdlog/spdlog.h>

namespace clk::util {

void quick_exit_if_possible(int status) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  (void)status;
#else
  spdlog::default_logger_raw()->flush();
  std::fflush(nullptr);
  ::_exit(status);
#endif
}

}  // namespace clk::util
