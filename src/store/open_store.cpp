// Database URL → backend → Store.
#include "store/open_store.hpp"

#include "error.hpp"
#include "store/database_url.hpp"
#include "store/postgres_loader.hpp"
#include "store/sqlite/file_trust.hpp"
#include "store/sqlite/store.hpp"

namespace clk::store {

std::unique_ptr<Store> open_store(const StoreOptions& options) {
  switch (backend_of(options.url)) {
    case Backend::sqlite:
      sqlite::prepare_database_file(sqlite_path_of(options.url), options.private_default);
      return make_sqlite_store(options);
    case Backend::postgres:
      return open_postgres_store(options);
  }
  throw Error(ExitCode::internal, "unknown backend");
}

std::string schema_sql(Backend backend, const std::string& pg_schema) {
  return backend == Backend::sqlite ? sqlite_schema_sql()
                                    : postgres_schema_sql_from_module(pg_schema);
}

}  // namespace clk::store
