// See store.hpp.
#include "store/mariadb/store.hpp"

#include "store/mariadb/schema.hpp"
#include "store/mariadb/session.hpp"
#include "store/server/server_store.hpp"

namespace clk::store {

std::unique_ptr<Store> make_mariadb_store(const StoreOptions& options) {
  return std::make_unique<server::ServerStore>(std::make_unique<mariadb::Session>(options));
}

std::string mariadb_schema_sql() {
  return mariadb::print_sql();
}

}  // namespace clk::store
