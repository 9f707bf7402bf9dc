// One row of a server's result set as text, as the server stores modules
// (store/postgres, store/mariadb) hand it to the readers that turn rows into
// the Store's types (status_rows.hpp, expected_rows.hpp).
#pragma once

namespace clk::store {

// One row of a result, as text: nullptr for SQL NULL. Valid during the visit.
class RowView {
 public:
  virtual ~RowView() = default;
  virtual const char* at(int column) const = 0;
};

}  // namespace clk::store
