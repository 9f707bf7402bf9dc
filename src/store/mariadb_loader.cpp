// See mariadb_loader.hpp: through store_module.hpp, without PostgreSQL's
// start-up tricks (Connector/C is one library, not twenty).
#include "store/mariadb_loader.hpp"

#include "store/mariadb/module.hpp"
#include "store/mariadb_url.hpp"
#include "store/store_module.hpp"

namespace clk::store {

namespace {

constexpr const char* k_mariadb_module_file = "clock-mariadb.so";

struct MariadbModule {
  decltype(&clock_mariadb_open) open = nullptr;
  decltype(&clock_mariadb_schema_sql) schema_sql = nullptr;
};

MariadbModule load_mariadb_module() {
  const ModuleSpec spec{k_mariadb_module_file, "MariaDB", "clock_mariadb_module_abi",
                        "build the clock_mariadb target", "rebuild clock"};
  auto entry = load_store_module(spec, {"clock_mariadb_open", "clock_mariadb_schema_sql"});
  return {reinterpret_cast<decltype(&clock_mariadb_open)>(entry[0]),
          reinterpret_cast<decltype(&clock_mariadb_schema_sql)>(entry[1])};
}

const MariadbModule& mariadb_module() {
  static const MariadbModule loaded = load_mariadb_module();
  return loaded;
}

}  // namespace

std::unique_ptr<Store> open_mariadb_store(const StoreOptions& options) {
  parse_mariadb_url(options.url);  // a bad URL says what is wrong before anything is loaded
  return std::unique_ptr<Store>(mariadb_module().open(options));
}

std::string mariadb_schema_sql_from_module(const std::string& url) {
  parse_mariadb_url(url);
  std::string sql;
  mariadb_module().schema_sql(sql);
  return sql;
}

}  // namespace clk::store
