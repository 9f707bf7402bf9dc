// See fault_tools.hpp.
#include "fault_tools.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <ctime>
#include <glob.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <doctest/doctest.h>

namespace clk::test {

std::int64_t epoch_ms(const std::string& iso8601) {
  std::tm utc{};
  int millis = 0;
  INFO("instant: " << iso8601);
  REQUIRE(std::sscanf(iso8601.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ", &utc.tm_year, &utc.tm_mon,
                      &utc.tm_mday, &utc.tm_hour, &utc.tm_min, &utc.tm_sec, &millis) == 7);
  utc.tm_year -= 1900;
  utc.tm_mon -= 1;
  return static_cast<std::int64_t>(timegm(&utc)) * 1000 + millis;
}

std::vector<nlohmann::json> history_of(const TestEnv& env, const std::string& resource,
                                       const std::map<std::string, std::string>& extra_env) {
  Result result =
      env.clock({"history", resource, "--format", "json", "--limit", "100000"}, extra_env);
  INFO(result.describe());
  REQUIRE(result.status == 0);
  nlohmann::json parsed;
  REQUIRE_NOTHROW(parsed = nlohmann::json::parse(result.out));
  std::vector<nlohmann::json> events(parsed.at("events").begin(), parsed.at("events").end());
  // Newest first on the wire; event ids grow with time.
  std::sort(events.begin(), events.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a.at("id").get<long long>() < b.at("id").get<long long>();
  });
  return events;
}

std::vector<std::string> event_names(const std::vector<nlohmann::json>& events,
                                     const std::string& owner) {
  std::vector<std::string> names;
  for (const auto& event : events) {
    if (event.value("owner", "") == owner)
      names.push_back(event.value("event", ""));
  }
  return names;
}

std::vector<std::string> without_permission_override() {
  if (geteuid() != 0)
    return {};
  return {"setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"};
}

std::vector<std::string> private_mounts(const TestEnv& env) {
  // As root a mount namespace is enough; otherwise a user namespace too.
  std::vector<std::string> prefix =
      geteuid() == 0 ? std::vector<std::string>{"unshare", "--mount", "--"}
                     : std::vector<std::string>{"unshare", "--map-root-user", "--mount", "--"};
  Command probe;
  probe.argv = prefix;
  probe.argv.insert(probe.argv.end(), {"/bin/sh", "-c", "mount -t tmpfs tmpfs /mnt"});
  probe.env = {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}};
  Result result = run(probe, env.path("output"), 30s);
  return result.status == 0 ? prefix : std::vector<std::string>{};
}

std::vector<std::string> another_pid_namespace() {
  // As root a pid namespace (and the mount namespace its /proc needs) is
  // enough; otherwise a user namespace too.
  if (geteuid() == 0)
    return {"unshare", "--pid", "--fork", "--mount-proc", "--"};
  return {"unshare", "--map-root-user", "--pid", "--fork", "--mount-proc", "--"};
}

std::map<std::string, std::string> snapshot_files(const fs::path& prefix) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::directory_iterator(prefix.parent_path())) {
    std::string name = entry.path().filename().string();
    if (name.rfind(prefix.filename().string(), 0) == 0 && !name.ends_with("-shm"))
      files[name] = read_file(entry.path());
  }
  return files;
}

nlohmann::json only_holder(const TestEnv& env, const std::string& resource) {
  auto holders = env.holders_of(resource);
  INFO("holders of " << resource << ": " << nlohmann::json(holders).dump());
  REQUIRE(holders.size() == 1);
  return holders[0];
}

SilentPort::SilentPort() : m_fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
  REQUIRE(m_fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  REQUIRE(bind(m_fd, reinterpret_cast<sockaddr*>(&address), length) == 0);
  REQUIRE(listen(m_fd, 16) == 0);
  REQUIRE(getsockname(m_fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  m_port = std::to_string(ntohs(address.sin_port));
}

SilentPort::~SilentPort() {
  close(m_fd);
}

std::string libfaketime_path() {
  glob_t found{};
  std::string path;
  if (glob("/usr/lib/*/faketime/libfaketime.so.1", 0, nullptr, &found) == 0 && found.gl_pathc > 0)
    path = found.gl_pathv[0];
  globfree(&found);
  return path;
}

std::map<std::string, std::string> skewed_clock_env(const std::string& offset) {
  const char* asan = std::getenv("ASAN_OPTIONS");
  std::string options = asan && *asan ? std::string(asan) + ":" : "";
  return {{"LD_PRELOAD", libfaketime_path()},
          {"FAKETIME", offset},
          {"FAKETIME_DONT_FAKE_MONOTONIC", "1"},
          {"ASAN_OPTIONS", options + "verify_asan_link_order=0"}};
}

}  // namespace clk::test
