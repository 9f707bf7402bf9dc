// clock run --jitter: a random delay before the first attempt. It comes
// before acquiring, so -w's budget starts after it.
#include "run/jitter.hpp"

#include <algorithm>
#include <random>
#include <thread>

#include <spdlog/spdlog.h>

#include "util/duration.hpp"
#include "util/random_seed.hpp"
#include "util/signal_flag.hpp"

namespace clk::run {

void wait_jitter(std::chrono::milliseconds span) {
  using namespace std::chrono;
  if (span <= milliseconds(0))
    return;
  std::mt19937_64 random(util::random_seed());
  milliseconds delay(std::uniform_int_distribution<milliseconds::rep>(0, span.count() - 1)(random));
  spdlog::info("jitter: waiting {} (of --jitter {}) before the first attempt",
               util::format_duration(delay), util::format_duration(span));
  util::SignalFlag signals;
  auto until = steady_clock::now() + delay;
  while (steady_clock::now() < until) {
    if (signals.caught())
      signals.die_of_caught_signal();
    std::this_thread::sleep_for(
        std::min<steady_clock::duration>(until - steady_clock::now(), milliseconds(100)));
  }
  if (signals.caught())
    signals.die_of_caught_signal();
}

}  // namespace clk::run
