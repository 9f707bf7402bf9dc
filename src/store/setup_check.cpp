// The checks of `clock check`, in the order a run needs them: the database
// answers, its schema is this binary's, this login may call what clock run
// calls, and (SQLite) the file and its folder take writes.
#include "store/setup_check.hpp"

#include <filesystem>
#include <unistd.h>

#include "store/open_store.hpp"

namespace clk::store {

namespace {

// A resource name nothing is likely to hold: status() of it reads the schema
// version and one empty range, whatever the table holds.
constexpr const char* k_probe = "clock-check";

void fail(SetupReport& report, std::string what, std::string detail, ExitCode code) {
  report.lines.push_back({false, std::move(what), std::move(detail)});
  if (report.code == ExitCode::ok)
    report.code = code;
}

void pass(SetupReport& report, std::string what) {
  report.lines.push_back({true, std::move(what), ""});
}

// SQLite writes the file, and its journal and WAL files beside it.
void check_sqlite_writable(SetupReport& report, const std::string& path) {
  namespace fs = std::filesystem;
  fs::path parent = fs::path(path).parent_path();
  const std::string folder = parent.empty() ? std::string(".") : parent.string();
  if (::access(path.c_str(), R_OK | W_OK) != 0) {
    fail(report, "database file writable",
         path +
             " is not readable and writable by this user: chown or chmod it (a shared file: "
             "mode 0660 and this user in its group)",
         ExitCode::local_database);
  } else if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    fail(report, "database file writable",
         "the folder " + folder +
             " is not writable by this user, and SQLite creates its journal there: chown or "
             "chmod it (a shared folder: mode 2770 and this user in its group)",
         ExitCode::local_database);
  } else {
    pass(report, "database file writable: " + path);
  }
}

}  // namespace

SetupReport check_setup(const StoreOptions& options) {
  SetupReport report;
  Backend backend;
  std::unique_ptr<Store> store;
  try {
    backend = backend_of(options.url);
    store = open_store(options);
  } catch (const Error& error) {
    fail(report, "database opened", error.what(), error.code());
    return report;
  }
  try {
    StatusQuery query;
    query.prefix = lock::Resource::parse(k_probe);
    store->status(query);
    pass(report, "database reached");
    pass(report, "schema current");
  } catch (const Error& error) {
    if (error.code() == ExitCode::unavailable) {
      fail(report, "database reached", error.what(), error.code());
      return report;
    }
    if (error.code() == ExitCode::local_database) {
      fail(report, "database file usable", error.what(), error.code());
      return report;
    }
    pass(report, "database reached");
    fail(report, "schema current", error.what(), error.code());
  }
  if (backend == Backend::sqlite) {
    check_sqlite_writable(report, sqlite_path_of(options.url));
    return report;
  }
  try {
    auto missing = store->missing_run_privileges();
    for (auto& line : missing)
      fail(report, "privileges for clock run", std::move(line), ExitCode::config);
    if (missing.empty())
      pass(report, "privileges for clock run");
  } catch (const Error& error) {
    fail(report, "privileges for clock run", error.what(), error.code());
  }
  // Routines kept for releases that may no longer run are harmless but
  // should not stay: a failed check is how an upgrade's forgotten clock
  // init shows (docs/upgrades.md).
  try {
    auto retired = store->retired_routines();
    for (auto& line : retired)
      fail(report, "no routines of retired releases", std::move(line), ExitCode::config);
    if (retired.empty())
      pass(report, "no routines of retired releases");
  } catch (const Error& error) {
    fail(report, "no routines of retired releases", error.what(), error.code());
  }
  return report;
}

}  // namespace clk::store
