// The entry points of the PostgreSQL module (clock-postgres.so), which
// open_store.cpp loads with dlopen only when a PostgreSQL URL is used.
#pragma once

#include <string>

#include "store/open_store.hpp"
#include "store/store.hpp"

extern "C" {

// The module's ABI version: the loader refuses a module built from other sources.
extern const int clock_postgres_module_abi;

// make_postgres_store(); the caller owns the result. Throws clk::Error.
clk::store::Store* clock_postgres_open(const clk::store::StoreOptions& options);

// postgres_schema_sql(). Throws clk::Error.
std::string clock_postgres_schema_sql(const std::string& pg_schema);
}
