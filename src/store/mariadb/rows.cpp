// See rows.hpp.
#include "store/mariadb/rows.hpp"

#include <chrono>

#include <nlohmann/json.hpp>

#include "error.hpp"

namespace clk::store::mariadb {

std::string json_array(const std::vector<lock::Resource>& resources) {
  nlohmann::json names = nlohmann::json::array();
  for (const auto& resource : resources)
    names.push_back(resource.str());
  return names.dump();
}

std::string json_array(const std::vector<std::int64_t>& numbers) {
  return nlohmann::json(numbers).dump();
}

Param boolean(bool value) {
  return std::int64_t{value ? 1 : 0};
}

Param text_or_null(const std::optional<std::string>& value) {
  if (!value)
    return std::monostate{};
  return *value;
}

Param microseconds_or_null(lock::Instant instant) {
  if (instant == lock::Instant{})
    return std::monostate{};
  return std::int64_t{
      std::chrono::duration_cast<std::chrono::microseconds>(instant.time_since_epoch()).count()};
}

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
