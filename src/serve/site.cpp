#include "serve/site.hpp"

#include <charconv>

#include "error.hpp"
#include "serve/page.hpp"
#include "store/history_since.hpp"

namespace clk::serve {

namespace {

constexpr const char* k_json = "application/json; charset=utf-8";
constexpr const char* k_text = "text/plain; charset=utf-8";
// The Prometheus text exposition format, version 0.0.4.
constexpr const char* k_metrics = "text/plain; version=0.0.4; charset=utf-8";
constexpr int k_history_max = 10000;

Reply bad_request(const std::string& why) {
  return {400, k_text, why + "\n"};
}

// /history.json?resource=PREFIX&since=D&host=H&limit=N&event=KIND, as
// clock history PREFIX --since D --host H --limit N --event KIND.
Reply history(Snapshots& snapshots, const SiteOptions& options, const Request& request) {
  store::HistoryQuery query;
  query.ns = options.ns;
  for (const auto& [name, value] : request.params) {
    if (name == "resource" && !value.empty()) {
      try {
        query.prefix = lock::Resource::parse(value);
      } catch (const Error& error) {
        return bad_request(std::string("resource: ") + error.what());
      }
    } else if (name == "since" && !value.empty()) {
      if (!store::set_history_since(query, value))
        return bad_request("since: " + std::string(store::k_history_since_forms) + " is expected");
    } else if (name == "host" && !value.empty()) {
      query.host = value;
    } else if (name == "limit") {
      int limit = 0;
      auto [end, problem] = std::from_chars(value.data(), value.data() + value.size(), limit);
      if (problem != std::errc() || end != value.data() + value.size() || limit < 1 ||
          limit > k_history_max)
        return bad_request("limit: a number from 1 to " + std::to_string(k_history_max));
      query.limit = limit;
    } else if (name == "event" && !value.empty()) {
      query.event = store::event_kind_of(value);
      if (!query.event)
        return bad_request(
            "event: acquired, released, expired, forced, lost, skipped, "
            "timed_out, killed or refused");
    }
  }
  auto json = snapshots.history_json(query);
  if (!json) {
    return {429, k_text,
            "too many different history queries this refresh period (" +
                std::to_string(Snapshots::k_histories_per_period) + "): ask again in " +
                std::to_string(options.refresh.count() / 1000 + 1) +
                "s, or ask what another page already asked\n"};
  }
  return {200, k_json, json};
}

}  // namespace

Reply answer(Snapshots& snapshots, const SiteOptions& options, const Request& request) {
  if (request.path == "/healthz") {
    // Answers whether the database could be read: the read throws (503) if not.
    snapshots.current();
    return {200, k_text, "ok\n"};
  }
  if (options.auth && !options.auth->allows(request.authorization))
    return {401, k_text, "authentication required\n"};
  if (request.path == "/")
    return {200, "text/html; charset=utf-8", render_page(options.refresh)};
  if (request.path == "/status.json")
    return {200, k_json, snapshots.current()->status_json};
  if (request.path == "/timeline.json")
    return {200, k_json, snapshots.current()->timeline_json};
  if (request.path == "/metrics")
    return {200, k_metrics, snapshots.current()->metrics};
  if (request.path == "/history.json")
    return history(snapshots, options, request);
  return {404, k_text,
          "not found: the pages are /, /status.json, /history.json, "
          "/timeline.json, /metrics and /healthz\n"};
}

}  // namespace clk::serve
