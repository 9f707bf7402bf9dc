// Config files, through the real loader (config::apply_config_text, which
// `clock` runs on the file's text): any input either loads into settings that
// keep their invariants or is a configuration error (exit 78) whose message
// names the file; never another exception.
#include <string>

#include "config/settings.hpp"
#include "error.hpp"
#include "fuzz_check.hpp"
#include "lock/resource.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto text = clk::fuzz::as_text(data, size);
  clk::config::Settings settings;
  try {
    clk::config::apply_config_text(settings, text, "/etc/clock/fuzz.toml");
  } catch (const clk::Error& error) {
    FUZZ_CHECK(error.code() == clk::ExitCode::config);
    FUZZ_CHECK(std::string_view(error.what()).find("/etc/clock/fuzz.toml") !=
               std::string_view::npos);
    return 0;
  }
  FUZZ_CHECK(settings.config_file == "/etc/clock/fuzz.toml");
  FUZZ_CHECK(settings.ttl.count() >= 0);
  FUZZ_CHECK(!settings.kill_after || settings.kill_after->count() >= 0);
  FUZZ_CHECK(settings.connect_timeout.count() >= 0);
  FUZZ_CHECK(!settings.heartbeat || settings.heartbeat->count() >= 0);
  FUZZ_CHECK(settings.gc_batch_size >= 1 && settings.gc_batch_size <= 1'000'000);
  FUZZ_CHECK(settings.log_format == clk::config::LogFormat::text ||
             settings.log_format == clk::config::LogFormat::json);
  // A namespace from the file is a valid name (it is used like a resource).
  if (!settings.ns.empty())
    clk::lock::Resource::parse(settings.ns);  // throws (a crash) if not
  FUZZ_CHECK(settings.ns_given || settings.ns.empty());
  return 0;
}
