// `clock check`: whether this host can run `clock run` against its database
// (reached, schema current or creatable, privileges, a writable SQLite
// file), one line per check, for operators and configuration management.
#pragma once

#include <string>
#include <vector>

#include "error.hpp"
#include "store/store_options.hpp"

namespace clk::store {

struct CheckLine {
  bool ok = false;
  std::string what;    // "database reached", "schema current", …
  std::string detail;  // on failure: what failed and what to do
};

struct SetupReport {
  std::vector<CheckLine> lines;
  // ok when every line is; else the code of the first failure: unavailable
  // (69) unreached, config (78) schema or privileges, local_database (74) a
  // SQLite file or folder this user cannot write.
  ExitCode code = ExitCode::ok;
};

// Runs the checks in order, stopping after one that leaves the rest
// unanswerable (an unreachable server). Creates the schema where a command
// would (man clock, DATABASE URLS: on first use where the credentials allow it); takes no
// lock and writes no history. Never throws clk::Error.
SetupReport check_setup(const StoreOptions& options);

}  // namespace clk::store
