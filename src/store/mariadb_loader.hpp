// The loader of the MariaDB module (clock-mariadb.so), linked into clock.
//
// A mysql:// or mariadb:// URL is parsed first (a bad one is a
// configuration error that says what is wrong, password masked), then the
// module is loaded from clock's private folder, once per process.
#pragma once

#include <memory>
#include <string>

#include "store/store.hpp"
#include "store/store_options.hpp"

namespace clk::store {

// Throws clk::Error(config): the URL is bad, or the module is missing or
// from another build.
std::unique_ptr<Store> open_mariadb_store(const StoreOptions& options);
std::string mariadb_schema_sql_from_module(const std::string& url);

}  // namespace clk::store
