// The refresh: status and expected runs as `clock status` reads them, and
// one bounded page of history (the newest events, by the primary key)
// for the timeline.
#include "serve/snapshots.hpp"

#include <malloc.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "output/render.hpp"
#include "serve/timeline.hpp"

namespace clk::serve {

namespace {

std::string history_key(const store::HistoryQuery& query) {
  std::string key = query.ns.value_or("\x01") + "\x02";
  key += query.prefix ? query.prefix->str() : "";
  key += "\x02" + std::to_string(query.limit) + "\x02";
  key += query.event ? std::string(store::to_string(*query.event)) : "";
  key += "\x02" + (query.since ? std::to_string(query.since->time_since_epoch().count()) : "");
  key += "\x02" + (query.within ? std::to_string(query.within->count()) : "");
  key += "\x02" + query.host.value_or("\x01");
  return key;
}

}  // namespace

Snapshots::Snapshots(OpenStore open, SnapshotOptions options)
    : m_open(std::move(open)), m_options(std::move(options)) {}

std::shared_ptr<const View> Snapshots::current() {
  std::lock_guard lock(m_mutex);
  if (!m_view || std::chrono::steady_clock::now() - m_view->taken >= m_options.refresh) {
    // Requests still answering from the old view keep it; this one no longer
    // does, so that at most one old and one new view are in memory.
    m_view.reset();
    try {
      m_view = read();
    } catch (...) {
      // Whatever state the failed read left the store in, the next read
      // starts from a fresh one.
      m_store.reset();
      throw;
    }
    // The read's transient allocations (rows, JSON trees) go back to the
    // system, not kept by malloc for the next period.
    malloc_trim(0);
    m_histories.clear();
  }
  return m_view;
}

// What a read leaves free goes back to the system before the next part is
// read or rendered: the store's cache (SQLite's pages: several MiB after a
// read of 10,000 leases) and the heap pages malloc keeps.
void Snapshots::give_back_memory() {
  m_store->rest();
  malloc_trim(0);
}

std::shared_ptr<const View> Snapshots::read() {
  if (!m_store || m_options.reopen_each_read) {
    m_store.reset();  // SQLite's file is closed before it is opened again
    m_store = m_open();
  }
  // A PostgreSQL connection is borrowed per read, not held between them.
  m_store->rest();
  const auto started = std::chrono::steady_clock::now();
  auto view = std::make_shared<View>();
  // One set of rows in memory at a time, each freed before the next is read:
  // the expected runs (small, and the database's now for the timeline),
  // then the timeline's events, then the status rows, which go as their
  // JSON is written.
  auto expected = m_store->expected_runs({m_options.ns, std::nullopt, std::nullopt});
  std::size_t event_count = 0;
  {
    store::HistoryQuery recent;
    recent.ns = m_options.ns;
    recent.limit = m_options.timeline_events;
    auto events = m_store->history(recent);
    event_count = events.size();
    // The widest zoom; older events were read only because fewer than the
    // limit happened since.
    const lock::Instant from = expected.now - m_options.window;
    const bool truncated = static_cast<int>(events.size()) >= m_options.timeline_events;
    std::erase_if(events, [&](const store::HistoryEvent& event) {
      // An end inside the window keeps its hold's start, whenever it was.
      return event.at < from && event.kind != store::EventKind::acquired;
    });
    // The timeline points into `events`: they live until it is rendered.
    auto timeline = build_timeline(events);
    std::erase_if(timeline.intervals, [&](const Interval& interval) {
      return interval.end && interval.end->at < from;
    });
    view->timeline_json =
        std::make_shared<const std::string>(timeline_json(timeline, expected.now, from, truncated));
  }
  give_back_memory();  // the events', and SQLite's cache of the history pages
  store::StatusQuery status_query;
  status_query.ns = m_options.ns;
  auto snapshot = m_store->status(status_query);
  give_back_memory();  // SQLite's cache of the lease pages
  snapshot.expected = std::move(expected);
  view->now = snapshot.now;
  ++m_reads;
  view->taken = std::chrono::steady_clock::now();
  view->metrics = std::make_shared<const std::string>(
      output::render_status(snapshot, output::Format::prometheus));
  // The JSON last, each holder freed once written (and the freed pages given
  // back as it goes): the peak holds the rows or their text, not both whole.
  const auto holders = snapshot.holders.size();
  std::string status = output::render_status_json_draining(snapshot, [] { malloc_trim(0); });
  // The page names the database it shows: one more member, first.
  status.insert(1, "\"database\":" +
                       nlohmann::json(m_options.database)
                           .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                       ",");
  view->status_json = std::make_shared<const std::string>(std::move(status));
  const auto waiters = snapshot.waiters.size();
  // -v: one line per read, so that an operator (and tests/bench) can see
  // that open pages share them.
  spdlog::info("read the database in {} ms: {} holders, {} waiters, {} history events",
               std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - started)
                   .count(),
               holders, waiters, event_count);
  return view;
}

std::shared_ptr<const std::string> Snapshots::history_json(const store::HistoryQuery& query) {
  current();
  std::lock_guard lock(m_mutex);
  const auto key = history_key(query);
  if (auto it = m_histories.find(key); it != m_histories.end())
    return it->second;
  if (m_histories.size() >= k_histories_per_period)
    return nullptr;
  if (!m_store)
    m_store = m_open();
  auto events = m_store->history(query);
  auto text =
      std::make_shared<const std::string>(output::render_history(events, output::Format::json));
  m_histories.emplace(key, text);
  return text;
}

long long Snapshots::reads() const {
  std::lock_guard lock(m_mutex);
  return m_reads;
}

}  // namespace clk::serve
