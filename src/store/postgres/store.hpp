// The Store on PostgreSQL: many hosts, one lock table. The server store
// (store/server/server_store.hpp) over a PostgreSQL session (session.hpp):
// every operation is one function call of sql/postgres, so one round trip
// and one transaction, with all lease arithmetic on the server.
#pragma once

#include <memory>
#include <string>

#include "store/store.hpp"
#include "store/store_options.hpp"

namespace clk::store {

// Connects with options.url: a postgresql:// URL or a libpq keyword string;
// libpq's environment (PGHOST, PGPASSWORD…) and files (.pgpass, service
// files) apply. Adds connect_timeout (options.connect_timeout) and TCP
// keepalives unless the URL or the environment sets them. Throws
// clk::Error: config (78) for an invalid pg_schema or a connection refused
// for its credentials or database name, unavailable (69) for a server that
// cannot be reached (the message names host and port, never the password).
// The schema is created or migrated on first use where the role may.
std::unique_ptr<Store> make_postgres_store(const StoreOptions& options);

// The DDL of every PostgreSQL migration and the current functions for schema
// `pg_schema`, as the one idempotent script that `clock init` runs, for
// `clock init --print-sql`. Throws clk::Error(config) for an invalid schema
// name.
std::string postgres_schema_sql(const std::string& pg_schema);

}  // namespace clk::store
