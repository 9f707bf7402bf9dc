// Database URL → backend → Store.
#include "store/open_store.hpp"

#include "error.hpp"
#include "store/database_url.hpp"
#include "store/mariadb_loader.hpp"
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
    case Backend::mariadb:
      return open_mariadb_store(options);
  }
  throw Error(ExitCode::internal, "unknown backend");
}

std::string schema_sql(const std::string& url, const std::string& pg_schema) {
  switch (backend_of(url)) {
    case Backend::sqlite:
      return sqlite_schema_sql();
    case Backend::postgres:
      return postgres_schema_sql_from_module(pg_schema);
    case Backend::mariadb:
      return mariadb_schema_sql_from_module(url);
  }
  throw Error(ExitCode::internal, "unknown backend");
}

}  // namespace clk::store
