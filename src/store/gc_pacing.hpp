// How many rows each of gc's transactions takes on. A fixed batch size is
// either slow on a quiet machine or, on a loaded one with a large table, a
// transaction that acquirers queue behind for hundreds of milliseconds (the
// benchmark saw 317 ms for 1,000 rows of a 1,000,000-lease SQLite file). The
// pacer starts small and steers the size so that one batch takes about
// `target`: the longest an acquirer waits for gc is then about one target,
// whatever the table size and the load. Header-only: both the SQLite store
// and the PostgreSQL module use it.
#pragma once

#include <algorithm>
#include <chrono>

namespace clk::store {

class BatchPacer {
 public:
  static constexpr int min_rows = 10;

  // `max_rows`: the configured gc.batch_size, never exceeded.
  explicit BatchPacer(int max_rows,
                      std::chrono::milliseconds target = std::chrono::milliseconds(20))
      : m_max_rows(std::max(1, max_rows)),
        m_target(target),
        m_rows(std::min(m_max_rows, first_rows)) {}

  // The size of the next batch.
  int rows() const { return m_rows; }
  // A batch of rows() rows took `elapsed`: halve the size if it took longer
  // than the target, double it if it took under a quarter of it.
  void took(std::chrono::steady_clock::duration elapsed) {
    if (elapsed > m_target)
      m_rows = std::max(std::min(min_rows, m_max_rows), m_rows / 2);
    else if (elapsed * 4 < m_target)
      m_rows = std::min(m_max_rows, m_rows * 2);
  }

 private:
  // The first batch: small enough to be short on any table, so that the
  // pacer's first measurement is never the stall it exists to prevent.
  static constexpr int first_rows = 100;

  int m_max_rows;
  std::chrono::steady_clock::duration m_target;
  int m_rows;
};

}  // namespace clk::store
