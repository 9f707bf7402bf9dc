// See store.hpp.
#include "store/postgres/store.hpp"

#include "store/postgres/schema.hpp"
#include "store/postgres/session.hpp"
#include "store/server/server_store.hpp"

namespace clk::store {

std::unique_ptr<Store> make_postgres_store(const StoreOptions& options) {
  return std::make_unique<server::ServerStore>(std::make_unique<postgres::Session>(options));
}

std::string postgres_schema_sql(const std::string& pg_schema) {
  return postgres::migration_script(pg_schema);
}

}  // namespace clk::store
