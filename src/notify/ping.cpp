// Pings through the clock-ping.so module (loaded on first use), and the
// shape of ping URLs. The URL is a secret of sorts (anyone who has it can
// ping the check), so messages show it masked.
#include "notify/ping.hpp"

#include <dlfcn.h>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "notify/module/ping_module.h"
#include "util/http_url.hpp"
#include "util/private_files.hpp"

namespace clk::notify {

namespace {

using SendFunction = decltype(&clock_ping_send);

// The module's send function, or the reason it cannot be had (logged once
// per process by the first ping).
struct Module {
  SendFunction send = nullptr;
  std::string problem;
};

Module load_module() {
  constexpr const char* k_file = "clock-ping.so";
  auto found = util::find_private_file(k_file);
  if (!found.path)
    return {nullptr,
            std::string("ping support is not installed: no ") + k_file + " in " + found.tried};
  const auto& file = *found.path;
  void* handle = dlopen(file.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (!handle)
    return {nullptr, "cannot load " + file.string() + ": " + dlerror()};
  const auto* abi = static_cast<const char*>(dlsym(handle, "clock_ping_module_abi"));
  auto send = reinterpret_cast<SendFunction>(dlsym(handle, "clock_ping_send"));
  if (!abi || std::string_view(abi) != CLOCK_PING_ABI || !send)
    return {nullptr, file.string() + " does not match this clock binary; reinstall clock"};
  return {send, ""};
}

const Module& module() {
  static const Module loaded = load_module();
  return loaded;
}

}  // namespace

std::string ping_endpoint(std::string_view url, std::string_view suffix, std::string_view run_id) {
  auto question = url.find('?');
  std::string_view path = url.substr(0, question);
  std::string_view query = question == std::string_view::npos ? "" : url.substr(question + 1);
  while (path.size() > util::http_host_end(path) && path.ends_with('/'))
    path.remove_suffix(1);
  std::string out = std::string(path) + "/" + std::string(suffix) + "?";
  if (!query.empty())
    out += std::string(query) + "&";
  return out + "rid=" + std::string(run_id);
}

Pinger::Pinger(std::string url, std::string run_id, bool log_skips)
    : m_url(std::move(url)), m_run_id(std::move(run_id)), m_log_skips(log_skips) {}

void Pinger::started() {
  send("start", "");
}

void Pinger::finished(int status, std::string_view tail) {
  send(std::to_string(status), tail);
}

void Pinger::skipped(std::string_view why) {
  if (m_log_skips)
    send("log", why);
}

void Pinger::failed(std::string_view why) {
  send("fail", why);
}

void Pinger::send(std::string_view suffix, std::string_view body) {
  const auto& loaded = module();
  const std::string shown = util::masked_http_url(m_url) + " /" + std::string(suffix);
  if (!loaded.send) {
    spdlog::warn("ping {} not sent: {}", shown, loaded.problem);
    return;
  }
  const std::string endpoint = ping_endpoint(m_url, suffix, m_run_id);
  char error[256] = "";
  auto started = std::chrono::steady_clock::now();
  long status = loaded.send(endpoint.c_str(), body.data(), body.size(), k_ping_timeout.count(),
                            "clock/" CLOCK_VERSION, error, sizeof error);
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started);
  if (status < 0) {
    spdlog::warn("ping {} failed after {} ms: {} (the job's exit status is unchanged)", shown,
                 took.count(), error);
  } else if (status < 200 || status > 299) {
    spdlog::warn("ping {} answered HTTP {} (the job's exit status is unchanged)", shown, status);
  } else {
    spdlog::info("ping {}: HTTP {} in {} ms", shown, status, took.count());
  }
}

}  // namespace clk::notify
