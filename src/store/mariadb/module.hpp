// The entry points that the MariaDB module (clock-mariadb.so) exports.
// mariadb_loader.cpp, in the clock binary, dlopens the module only for a
// mysql:// or mariadb:// URL.
#pragma once

#include <string>

#include "store/store.hpp"
#include "store/store_options.hpp"

extern "C" {

// CLOCK_STORE_ABI, as clock_postgres_module_abi.
extern const char clock_mariadb_module_abi[];

// make_mariadb_store(); the caller owns the result. Throws clk::Error.
clk::store::Store* clock_mariadb_open(const clk::store::StoreOptions& options);

// mariadb_schema_sql(), into `sql`. Throws clk::Error.
void clock_mariadb_schema_sql(std::string& sql);
}
