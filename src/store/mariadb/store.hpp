// The MariaDB store: the server store (store/server/server_store.hpp) over a
// MariaDB session (session.hpp), opened by the module's entry point
// (module.cpp) for a mysql:// or mariadb:// URL.
#pragma once

#include <memory>

#include "store/store.hpp"
#include "store/store_options.hpp"

namespace clk::store {

// Parses the URL (clk::Error(config) if bad); connects on first use.
std::unique_ptr<Store> make_mariadb_store(const StoreOptions& options);

// The DDL of `clock init --print-sql`.
std::string mariadb_schema_sql();

}  // namespace clk::store
