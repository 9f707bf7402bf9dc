// The entry points that the PostgreSQL module (clock-postgres.so) exports.
// postgres_loader.cpp, in the clock binary, dlopens the module only when a
// PostgreSQL URL is used and finds these by name.
#pragma once

#include <string>

#include "store/store.hpp"
#include "store/store_options.hpp"

extern "C" {

// CLOCK_STORE_ABI: a hash of the headers whose types cross the module boundary
// (CMakeLists.txt), so the loader refuses a module built from other sources.
extern const char clock_postgres_module_abi[];

// make_postgres_store(); the caller owns the result. Throws clk::Error.
clk::store::Store* clock_postgres_open(const clk::store::StoreOptions& options);

// postgres_schema_sql(), into `sql` (a C-linkage function returns no C++
// object). Throws clk::Error.
void clock_postgres_schema_sql(const std::string& pg_schema, std::string& sql);
}
