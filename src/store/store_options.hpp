// How to reach a store: what open_store and both backends take (SPEC §2).
#pragma once

#include <chrono>
#include <string>

namespace clk::store {

// Filled from config::Settings, where the defaults are written (once).
struct StoreOptions {
  std::string url;  // sqlite:PATH, sqlite:///PATH, postgresql://…, postgres://…, or "key=value …"
  std::string pg_schema;
  std::chrono::milliseconds connect_timeout{};  // 0: libpq's own (none)
  bool allow_network_filesystem = false;        // SQLite on NFS/CIFS: refused unless set
};

}  // namespace clk::store
