// The exported entry points of the PostgreSQL module.
#include "store/postgres/module.hpp"

#include "store/postgres/store.hpp"

extern "C" {

const char clock_postgres_module_abi[] = CLOCK_STORE_ABI;

clk::store::Store* clock_postgres_open(const clk::store::StoreOptions& options) {
  return clk::store::make_postgres_store(options).release();
}

void clock_postgres_schema_sql(const std::string& pg_schema, std::string& sql) {
  sql = clk::store::postgres_schema_sql(pg_schema);
}
}
