// See mariadb_loader.hpp. The same shape as postgres_loader.cpp, without its
// start-up tricks (Connector/C is one library, not twenty).
#include "store/mariadb_loader.hpp"

#include <cstring>
#include <dlfcn.h>
#include <filesystem>

#include "error.hpp"
#include "store/mariadb/module.hpp"
#include "store/mariadb_url.hpp"
#include "util/private_files.hpp"

namespace clk::store {

namespace {

namespace fs = std::filesystem;

constexpr const char* k_mariadb_module_file = "clock-mariadb.so";

struct MariadbModule {
  decltype(&clock_mariadb_open) open = nullptr;
  decltype(&clock_mariadb_schema_sql) schema_sql = nullptr;
};

MariadbModule load_mariadb_module() {
  auto found = util::find_private_file(k_mariadb_module_file);
  if (!found.path) {
    throw Error(ExitCode::config, "MariaDB support is not installed: no " +
                                      std::string(k_mariadb_module_file) + " in " + found.tried +
                                      " (build the clock_mariadb target)");
  }
  const auto& file = *found.path;
  void* handle = dlopen(file.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (!handle) {
    throw Error(ExitCode::config,
                "cannot load the MariaDB module " + file.string() + ": " + dlerror());
  }
  const auto* abi = static_cast<const char*>(dlsym(handle, "clock_mariadb_module_abi"));
  MariadbModule module{
      reinterpret_cast<decltype(&clock_mariadb_open)>(dlsym(handle, "clock_mariadb_open")),
      reinterpret_cast<decltype(&clock_mariadb_schema_sql)>(
          dlsym(handle, "clock_mariadb_schema_sql"))};
  if (!abi || std::strcmp(abi, CLOCK_STORE_ABI) != 0 || !module.open || !module.schema_sql) {
    throw Error(ExitCode::config, "the MariaDB module " + file.string() +
                                      " does not match this clock binary; rebuild clock");
  }
  return module;
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
