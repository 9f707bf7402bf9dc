// The exported entry points of the MariaDB module.
#include "store/mariadb/module.hpp"

#include "store/mariadb/store.hpp"

extern "C" {

const char clock_mariadb_module_abi[] = CLOCK_STORE_ABI;

clk::store::Store* clock_mariadb_open(const clk::store::StoreOptions& options) {
  return clk::store::make_mariadb_store(options).release();
}

void clock_mariadb_schema_sql(std::string& sql) {
  sql = clk::store::mariadb_schema_sql();
}
}
