#include "util/random_seed.hpp"

#include <chrono>
#include <sys/random.h>
#include <unistd.h>

namespace clk::util {

std::uint64_t random_seed() {
  std::uint64_t seed = 0;
  if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) == static_cast<ssize_t>(sizeof seed))
    return seed;
  auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  return static_cast<std::uint64_t>(now) * 0x9e3779b97f4a7c15ULL ^
         static_cast<std::uint64_t>(getpid());
}

}  // namespace clk::util
