// What `clock serve` reads, at most once per refresh period whatever the
// number of open pages: the status (holders, waiters, expected runs), the
// newest history events for the timeline, and each rendering of them. Every
// request of the period is answered from the same read.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "store/store.hpp"

namespace clk::serve {

struct SnapshotOptions {
  std::optional<std::string> ns;  // none: every namespace (as clock status)
  std::chrono::milliseconds refresh{5000};
  int timeline_events = 10000;  // the newest history events the timeline reads
  std::chrono::milliseconds window{7 * 24 * 3600 * 1000LL};  // the widest zoom
  // The database as the page names it, its password masked (as clock
  // status shows it): /status.json's "database".
  std::string database;
  // Open the store anew for every read (SQLite): a file removed, replaced or
  // made unreadable is then seen at the next read, not read from the file
  // that was open at start for ever.
  bool reopen_each_read = false;
};

// One read of the database and what was rendered from it.
struct View {
  std::chrono::steady_clock::time_point taken;
  lock::Instant now;  // the database's clock at the read
  // Each rendered once per read and shared by the requests that send it.
  // as clock status --format json, and "database" (SnapshotOptions::database)
  std::shared_ptr<const std::string> status_json;
  std::shared_ptr<const std::string> metrics;        // as clock status --format prometheus
  std::shared_ptr<const std::string> timeline_json;  // /timeline.json
};

class Snapshots {
 public:
  using OpenStore = std::function<std::unique_ptr<store::Store>()>;
  Snapshots(OpenStore open, SnapshotOptions options);

  // The current view: read now if the last one is a refresh period old.
  // Concurrent callers share one read. Throws what the store throws; the
  // store is opened again for the next read after a failed one.
  std::shared_ptr<const View> current();

  // /history.json's distinct queries per refresh period: enough for a few
  // pages' worth of different filters; the database runs no more history
  // queries than this a period, whatever clients send.
  static constexpr std::size_t k_histories_per_period = 64;

  // As clock history --format json for `query` (its since/within/host
  // filters too); remembered per query (its parsed values, not its text)
  // for one refresh period. Null when the period's queries are all taken
  // and this one is not among them.
  std::shared_ptr<const std::string> history_json(const store::HistoryQuery& query);

  // How many times the database has been read (status, expected runs and
  // history count as one set): for clock serve -v and the tests.
  long long reads() const;

 private:
  std::shared_ptr<const View> read();
  void give_back_memory();

  OpenStore m_open;
  SnapshotOptions m_options;
  mutable std::mutex m_mutex;  // the store is used by one thread at a time
  std::unique_ptr<store::Store> m_store;
  std::shared_ptr<const View> m_view;
  // query → JSON, for the current view
  std::map<std::string, std::shared_ptr<const std::string>> m_histories;
  long long m_reads = 0;
};

}  // namespace clk::serve
