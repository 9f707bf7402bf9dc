// How to reach a store: what open_store and both backends take (SPEC §2).
#pragma once

#include <chrono>
#include <string>

namespace clk::store {

struct StoreOptions {
  std::string url;  // sqlite:PATH, sqlite:///PATH, postgresql://…, postgres://…, or "key=value …"
  std::string pg_schema = "clock";
  std::chrono::milliseconds connect_timeout{5000};
  bool allow_network_filesystem = false;  // SQLite on NFS/CIFS: refused unless set
};

}  // namespace clk::store
