// What `clock config` lists: the settings as text, passwords masked.
#include "config/shown_settings.hpp"

#include "util/duration.hpp"
#include "util/http_url.hpp"
#include "util/password.hpp"

namespace clk::config {

namespace {

std::string duration_text(const std::optional<milliseconds>& value, const std::string& none) {
  return value ? util::format_duration(*value) : none;
}

}  // namespace

std::vector<ShownSetting> shown_settings(const Settings& settings) {
  std::vector<ShownSetting> shown;
  auto add = [&](const std::string& key, const std::string& value) {
    shown.push_back({key, value, origin_of(settings, key)});
  };
  add("database", util::mask_passwords(settings.database_url, util::Words::until_keyword));
  add("database_patience", duration_text(settings.database_patience, "forever"));
  add("namespace", settings.ns);
  add("log_level", settings.log_level);
  add("log_format", settings.log_format == LogFormat::json ? "json" : "text");
  add("lock.ttl", util::format_duration(settings.ttl));
  add("lock.heartbeat", duration_text(settings.heartbeat, "TTL/10, at least 100ms"));
  add("lock.kill_after", duration_text(settings.kill_after, "TTL/10, at most 10s"));
  add("lock.leftovers", settings.leftovers_wait ? "wait" : "kill");
  add("postgres.schema", settings.pg_schema);
  add("postgres.connect_timeout", util::format_duration(settings.connect_timeout));
  add("postgres.watch_lease", settings.watch_lease ? "true" : "false");
  add("mariadb.galera_max_skew", util::format_duration(settings.galera_max_skew));
  add("gc.history_retention", duration_text(settings.history_retention, "keep all"));
  add("gc.batch_size", std::to_string(settings.gc_batch_size));
  add("sqlite.allow_network_filesystem", settings.allow_network_filesystem ? "true" : "false");
  add("ping.on_skip", settings.ping_log_skips ? "log" : "none");
  // A ping URL's path is its check's secret: shown as scheme and host only.
  std::string urls;
  for (const auto& [resource, url] : settings.ping_urls)
    urls += (urls.empty() ? "" : ", ") + resource + " = " + util::masked_http_url(url);
  add("ping.urls", settings.ping_urls.empty() ? "none" : urls);
  shown.push_back(
      {"config_file", settings.config_file.string(),
       settings.config_file.empty() ? "none found" : origin_of(settings, "config_file")});
  if (settings.owner) {
    auto dot = settings.owner->find('.');
    add("owner", settings.owner->substr(0, dot));
  }
  return shown;
}

}  // namespace clk::config
