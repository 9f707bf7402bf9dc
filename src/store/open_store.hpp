// From a database URL to the right Store (SPEC §2).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "store/store.hpp"

namespace clk::store {

enum class Backend { sqlite, postgres };

struct StoreOptions {
  std::string url;  // sqlite:PATH, sqlite:///PATH, postgresql://…, postgres://…, or "key=value …"
  std::string pg_schema = "clock";
  std::chrono::milliseconds connect_timeout{5000};
  bool allow_network_filesystem = false;  // SQLite on NFS/CIFS: refused unless set
};

// Which backend a URL names; throws clk::Error(config) for anything else.
Backend backend_of(const std::string& url);

// The SQLite file path of a sqlite: URL.
std::string sqlite_path_of(const std::string& url);

// Masks the password in a URL or keyword string, for logs and messages: what
// libpq takes as the password, and the words of one typed with spaces.
std::string mask_password(const std::string& url);

// Opens (and connects) the store; creates the schema on first use where allowed.
std::unique_ptr<Store> open_store(const StoreOptions& options);

// The DDL that `clock init --print-sql` prints for a backend.
std::string schema_sql(Backend backend, const std::string& pg_schema);

}  // namespace clk::store
