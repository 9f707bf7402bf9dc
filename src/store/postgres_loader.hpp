// The loader, linked into clock: loads the PostgreSQL module (clock-postgres.so)
// on first use, next to the clock binary (a build tree), else in the installed
// module folder.
#pragma once

#include <memory>
#include <string>

#include "store/store.hpp"
#include "store/store_options.hpp"

namespace clk::store {

// Throws clk::Error(config) naming the paths tried if the module is missing.
std::unique_ptr<Store> open_postgres_store(const StoreOptions& options);
std::string postgres_schema_sql_from_module(const std::string& pg_schema);

}  // namespace clk::store
