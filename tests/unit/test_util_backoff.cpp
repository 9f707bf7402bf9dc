// The back-off between retries of server trouble (util/backoff.hpp): 50 ms
// doubling to 2 s, each delay within ±50% of its step.
#include <chrono>

#include <doctest/doctest.h>

#include "util/backoff.hpp"

using namespace std::chrono_literals;
using clk::util::Backoff;
using std::chrono::milliseconds;

TEST_SUITE("util::backoff") {
  TEST_CASE("delays double from 50 ms to at most 2 s, each within half a step either side") {
    for (int run = 0; run < 50; ++run) {
      Backoff backoff;
      milliseconds step = 50ms;
      for (int retry = 0; retry < 12; ++retry) {
        CAPTURE(retry);
        milliseconds delay = backoff.next();
        CHECK(delay >= step / 2);
        CHECK(delay < step * 3 / 2);
        step = std::min(step * 2, milliseconds(2'000));
      }
    }
  }

  TEST_CASE("delays are jittered: a fleet refused together does not come back together") {
    Backoff a;
    Backoff b;
    bool differ = false;
    for (int retry = 0; retry < 8; ++retry)
      differ = differ || a.next() != b.next();
    CHECK(differ);
  }

  TEST_CASE("reset starts again from the first step") {
    Backoff backoff;
    for (int retry = 0; retry < 10; ++retry)
      backoff.next();
    backoff.reset();
    CHECK(backoff.next() < 75ms);
  }
}
