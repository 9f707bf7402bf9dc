// The rows of PostgreSQL's status_rows() (sql/postgres/functions/
// 40_status_gc.sql) and MariaDB's clock_status_rows (sql/mariadb/procedures/
// 40_status_gc.sql): the same columns in the same order, read one at a time
// into a Snapshot sorted as `clock status` shows it. The two differ only in
// how an instant is written.
#pragma once

#include "store/store.hpp"

namespace clk::store {

class RowView;  // row_view.hpp

enum class InstantFormat {
  utc_text,            // PostgreSQL: "YYYY-MM-DD HH:MM:SS[.ffffff]", UTC
  epoch_microseconds,  // MariaDB: integer microseconds since 1970 UTC
};

class StatusRows {
 public:
  explicit StatusRows(InstantFormat format) : m_format(format) {}
  void add(const RowView& row);
  Snapshot take();

 private:
  InstantFormat m_format;
  Snapshot m_snapshot;
};

}  // namespace clk::store
