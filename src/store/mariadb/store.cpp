// See store.hpp. The next step (docs/mariadb.md) replaces not_finished() in
// each operation with a call of its stored procedure.
#include "store/mariadb/store.hpp"

#include <algorithm>

#include "store/mariadb/connection.hpp"
#include "store/mariadb/schema.hpp"

namespace clk::store {

namespace {

using namespace std::chrono_literals;

[[noreturn]] void not_finished(const char* operation) {
  throw Error(ExitCode::config, std::string("MariaDB support is not finished: ") + operation +
                                    " is not implemented yet (issue 30)");
}

class MariadbStore : public Store {
 public:
  explicit MariadbStore(const StoreOptions& options) : m_connection(connect_options(options)) {}

  Attempt try_acquire(const LockRequest&, bool) override {
    first_use();
    not_finished("acquire");
  }
  void leave_queue(const LockRequest&) override {
    first_use();
    not_finished("leaving the queue");
  }
  void record_missed_run(const LockRequest&, EventKind, const std::optional<InTheWay>&) override {
    first_use();
    not_finished("history of runs that did not happen");
  }
  void wait_for_change(std::chrono::steady_clock::time_point) override {
    first_use();
    not_finished("waiting");
  }
  void renew(const RenewRequest&) override {
    first_use();
    not_finished("renew");
  }
  bool still_holds(const RenewRequest&) override {
    first_use();
    not_finished("lease watch");
  }
  std::optional<milliseconds> still_holds_interval() const override { return std::nullopt; }
  std::vector<Released> release(const ReleaseRequest&) override {
    first_use();
    not_finished("release");
  }
  void note_leftovers(const LeftoversNote&) override {
    first_use();
    not_finished("recording leftovers");
  }
  void expect_runs(const Expectation&) override {
    first_use();
    not_finished("expected runs");
  }
  ExpectedRuns expected_runs(const ExpectedQuery&) override {
    first_use();
    not_finished("expected runs");
  }
  Snapshot status(const StatusQuery&) override {
    first_use();
    not_finished("status");
  }
  std::vector<HistoryEvent> history(const HistoryQuery&) override {
    first_use();
    not_finished("history");
  }
  GcReport gc(const GcOptions&) override {
    first_use();
    not_finished("gc");
  }

  void migrate() override {
    mariadb::migrate(m_connection);
    m_connection.close();  // borrowed, not held (SPEC §3)
  }

  std::vector<std::string> setup_warnings() override { return {}; }

 private:
  // Migrates on the first operation of a process when the database is not
  // current (no schema yet, a migration or the procedures of a newer clock
  // missing), as the PostgreSQL store does: one query per process.
  void first_use() {
    if (m_checked)
      return;
    if (!mariadb::is_current(m_connection))
      mariadb::migrate(m_connection);
    m_checked = true;
  }

  static mariadb::ConnectOptions connect_options(const StoreOptions& options) {
    mariadb::ConnectOptions out;
    out.url = parse_mariadb_url(options.url);
    if (options.connect_timeout > 0ms) {
      out.connect_timeout =
          std::max(1s, std::chrono::ceil<std::chrono::seconds>(options.connect_timeout));
    }
    return out;
  }

  mariadb::Connection m_connection;
  bool m_checked = false;
};

}  // namespace

std::unique_ptr<Store> make_mariadb_store(const StoreOptions& options) {
  return std::make_unique<MariadbStore>(options);
}

std::string mariadb_schema_sql() {
  return mariadb::print_sql();
}

}  // namespace clk::store
