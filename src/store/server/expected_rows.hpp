// The rows of expected_rows() (sql/postgres/functions/60_expected_runs.sql)
// and of MariaDB's clock_expected_rows (the same columns), read one at a time
// into ExpectedRuns.
#pragma once

#include <map>
#include <string>
#include <utility>

#include "store/store.hpp"

namespace clk::store {

class RowView;  // row_view.hpp

class ExpectedRows {
 public:
  void add(const RowView& row);
  // By namespace and resource, each resource's successes ascending.
  ExpectedRuns take();

 private:
  lock::Instant m_now{};
  std::map<std::pair<std::string, std::string>, ExpectedRun> m_runs;
  std::vector<std::pair<std::pair<std::string, std::string>, lock::Instant>> m_successes;
};

}  // namespace clk::store
