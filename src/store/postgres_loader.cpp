// The loader of the PostgreSQL module (store/postgres/module.hpp), through
// store_module.hpp, with libpq's start-up costs avoided (open_module).
#include "store/postgres_loader.hpp"

#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>

#include "store/postgres/module.hpp"
#include "store/store_module.hpp"

namespace clk::store {

namespace {

namespace fs = std::filesystem;

constexpr const char* k_postgres_module_file = "clock-postgres.so";

// dlopen with two start-up costs avoided (measured with callgrind, tests/bench):
// - RTLD_LAZY: libpq brings some twenty libraries (Kerberos, LDAP, GnuTLS,
//   OpenSSL…); binding all their functions at load (RTLD_NOW) was three
//   quarters of the instructions of a whole `clock run -- true`. Lazily, only
//   the functions clock calls are bound. The module and its libraries are
//   those the package depends on, so no symbol is missing at run time.
// - GNUTLS_NO_IMPLICIT_INIT: libldap (a libpq dependency) links GnuTLS, whose
//   constructor initialises PKCS#11 and its random generator (some 0.7 MiB of
//   resident memory) for TLS that only an LDAP lookup of the connection
//   service would use, and OpenLDAP initialises GnuTLS explicitly before its
//   first TLS use. Set for the dlopen only, unless the user set it: the
//   command clock runs must not inherit it.
void* open_module(const fs::path& file) {
  constexpr const char* k_gnutls_init = "GNUTLS_NO_IMPLICIT_INIT";
  const bool ours = getenv(k_gnutls_init) == nullptr && setenv(k_gnutls_init, "1", 0) == 0;
  void* handle = dlopen(file.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (ours)
    unsetenv(k_gnutls_init);
  return handle;
}

struct PostgresModule {
  decltype(&clock_postgres_open) open = nullptr;
  decltype(&clock_postgres_schema_sql) schema_sql = nullptr;
};

PostgresModule load_postgres_module() {
  const ModuleSpec spec{
      k_postgres_module_file,      "PostgreSQL",
      "clock_postgres_module_abi", "install the clock package, or build the clock_postgres target",
      "reinstall clock",           open_module};
  auto entry = load_store_module(spec, {"clock_postgres_open", "clock_postgres_schema_sql"});
  return {reinterpret_cast<decltype(&clock_postgres_open)>(entry[0]),
          reinterpret_cast<decltype(&clock_postgres_schema_sql)>(entry[1])};
}

const PostgresModule& postgres_module() {
  static const PostgresModule loaded = load_postgres_module();
  return loaded;
}

}  // namespace

std::unique_ptr<Store> open_postgres_store(const StoreOptions& options) {
  return std::unique_ptr<Store>(postgres_module().open(options));
}

std::string postgres_schema_sql_from_module(const std::string& pg_schema) {
  std::string sql;
  postgres_module().schema_sql(pg_schema, sql);
  return sql;
}

}  // namespace clk::store
