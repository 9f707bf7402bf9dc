// Between the Store's types and a CALL's parameters and rows: what
// PostgreSQL takes as an array MariaDB's procedures take as a JSON array,
// and a result row is read through store::RowView, so that the readers of
// store/status_rows.hpp and store/expected_rows.hpp serve both servers.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lock/lease.hpp"
#include "store/mariadb/connection.hpp"
#include "store/server/row_view.hpp"

namespace clk::store::mariadb {

// ["a","b.c"]: the resources' names as a JSON array.
std::string json_array(const std::vector<lock::Resource>& resources);
// [1,2]: tokens (or pids) as a JSON array.
std::string json_array(const std::vector<std::int64_t>& numbers);

// A BOOLEAN parameter.
Param boolean(bool value);
// An optional text parameter: NULL when none.
Param text_or_null(const std::optional<std::string>& value);
// An instant as BIGINT microseconds since 1970; NULL when unknown (the
// default Instant).
Param microseconds_or_null(lock::Instant instant);

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
