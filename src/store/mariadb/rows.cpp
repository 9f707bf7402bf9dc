// See rows.hpp.
#include "store/mariadb/rows.hpp"

#include "error.hpp"

namespace clk::store::mariadb {

std::string single_value(std::string_view procedure, const std::vector<Row>& rows) {
  if (rows.size() != 1 || rows.front().size() != 1 || !rows.front().front()) {
    throw Error(ExitCode::internal,
                "unexpected reply from MariaDB's " + std::string(procedure) +
                    ": not one value (is the database's clock schema from this version?)");
  }
  return *rows.front().front();
}

const char* RowText::at(int column) const {
  if (column < 0 || static_cast<std::size_t>(column) >= m_row.size() || !m_row[column])
    return nullptr;
  return m_row[column]->c_str();
}

}  // namespace clk::store::mariadb
