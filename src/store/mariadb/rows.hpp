// A CALL's rows as the server store reads them: a result row through
// store::RowView, so that the readers of store/server/status_rows.hpp and
// expected_rows.hpp serve both servers, and a procedure's one reply value.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "store/mariadb/connection.hpp"
#include "store/server/row_view.hpp"

namespace clk::store::mariadb {

// The one column of the one row that a procedure replies with (its JSON, a
// count or a boolean); clk::Error(internal) when there is none.
std::string single_value(std::string_view procedure, const std::vector<Row>& rows);

// A Row seen as a RowView; a column past its end reads as NULL.
class RowText final : public RowView {
 public:
  explicit RowText(const Row& row) : m_row(row) {}
  const char* at(int column) const override;

 private:
  const Row& m_row;
};

}  // namespace clk::store::mariadb
