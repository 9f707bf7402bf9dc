// The Store on an embedded SQLite file: one host, any number of processes.
#pragma once

#include <memory>
#include <string>

#include "store/store.hpp"
#include "store/store_options.hpp"

namespace clk::store {

// Opens the SQLite file named by options.url, creating its folder and the
// schema as needed. Throws clk::Error(local_database) for an unusable file or
// one on a network file system (unless options allow it).
std::unique_ptr<Store> make_sqlite_store(const StoreOptions& options);

// The DDL of every SQLite migration, for `clock init --print-sql`.
std::string sqlite_schema_sql();

}  // namespace clk::store
