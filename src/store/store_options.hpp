// How to reach a store: what open_store and both backends take (man clock, DATABASE URLS).
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
  // A PostgreSQL holder keeps a connection that LISTENs for the loss of its
  // lease (postgres/lease_watch.hpp); SQLite always watches, at no cost.
  bool watch_lease = false;
  // On a Galera node: the most its clock may differ from the other nodes'
  // before clock refuses it (mariadb/node_clocks.hpp).
  std::chrono::milliseconds galera_max_skew{500};
  // The URL is the per-user default SQLite file, which nobody named: its
  // folder and files are made private, and another user's are refused.
  bool private_default = false;
};

}  // namespace clk::store
