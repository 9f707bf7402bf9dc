// Jittered exponential back-off between retries of a call that met trouble
// (a full or restarting database): 50 ms doubling to 2 s, each delay drawn
// within ±50% of its step, so that a fleet refused together does not come
// back together.
#pragma once

#include <algorithm>
#include <chrono>
#include <random>

#include "util/random_seed.hpp"

namespace clk::util {

class Backoff {
 public:
  static constexpr std::chrono::milliseconds k_first{50};
  static constexpr std::chrono::milliseconds k_longest{2'000};

  // The delay before the next retry: the step (50 ms, 100 ms, … 2 s) times a
  // random factor in [0.5, 1.5).
  std::chrono::milliseconds next() {
    auto step = m_step;
    m_step = std::min(m_step * 2, k_longest);
    std::uniform_real_distribution<double> factor(0.5, 1.5);
    return std::chrono::milliseconds(
        static_cast<std::chrono::milliseconds::rep>(step.count() * factor(m_random)));
  }

  // Back to the first step (after a call that succeeded).
  void reset() { m_step = k_first; }

 private:
  std::chrono::milliseconds m_step = k_first;
  std::minstd_rand m_random{static_cast<std::minstd_rand::result_type>(random_seed())};
};

}  // namespace clk::util
