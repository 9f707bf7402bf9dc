// From a database URL to the right Store (man clock, DATABASE URLS).
#pragma once

#include <memory>
#include <string>

#include "store/database_url.hpp"
#include "store/store.hpp"
#include "store/store_options.hpp"

namespace clk::store {

// Opens (and connects) the store; creates the schema on first use where allowed.
std::unique_ptr<Store> open_store(const StoreOptions& options);

// The DDL that `clock init --print-sql` prints for the URL's backend.
std::string schema_sql(const std::string& url, const std::string& pg_schema);

}  // namespace clk::store
