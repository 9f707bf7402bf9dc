#include <doctest/doctest.h>

#include "store/gc_pacing.hpp"

using clk::store::BatchPacer;
using namespace std::chrono_literals;

TEST_SUITE("gc pacing") {
  TEST_CASE("the first batch is small, and never above the configured size") {
    CHECK(BatchPacer(1000).rows() == 100);
    CHECK(BatchPacer(30).rows() == 30);
    CHECK(BatchPacer(0).rows() == 1);
  }

  TEST_CASE("quick batches grow up to the configured size, and stay there") {
    BatchPacer pacer(1000, 20ms);
    pacer.took(1ms);
    CHECK(pacer.rows() == 200);
    for (int i = 0; i < 10; ++i)
      pacer.took(1ms);
    CHECK(pacer.rows() == 1000);
  }

  TEST_CASE("slow batches shrink, down to a floor; batches near the target keep their size") {
    BatchPacer pacer(1000, 20ms);
    pacer.took(50ms);
    CHECK(pacer.rows() == 50);
    pacer.took(15ms);
    CHECK(pacer.rows() == 50);
    for (int i = 0; i < 10; ++i)
      pacer.took(50ms);
    CHECK(pacer.rows() == BatchPacer::min_rows);
  }

  TEST_CASE("a configured size below the floor is kept") {
    BatchPacer pacer(5, 20ms);
    pacer.took(50ms);
    CHECK(pacer.rows() == 5);
  }
}
