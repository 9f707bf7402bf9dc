// Logger set-up: everything goes to stderr so stdout stays for results.
#include "output/logging.hpp"

#include <cstdio>
#include <string_view>

#include <nlohmann/json.hpp>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace clk::output {

namespace {

// %j: the message as a JSON string literal, quotes and control characters escaped.
class JsonMessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    std::string text(msg.payload.data(), msg.payload.size());
    auto quoted =
        nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    dest.append(quoted.data(), quoted.data() + quoted.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonMessageFlag>();
  }
};

// %E: the message with control characters as \xNN, so that a name or
// command line quoted in a message cannot drive the terminal or split the
// line. Backslashes stay: text escaped earlier (escape_for_terminal) is shown
// as it is.
class SafeMessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    for (char c : std::string_view(msg.payload.data(), msg.payload.size())) {
      auto byte = static_cast<unsigned char>(c);
      if (byte < 0x20 || byte == 0x7f) {
        char escaped[5];
        std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
        dest.append(escaped, escaped + 4);
      } else {
        dest.push_back(c);
      }
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<SafeMessageFlag>();
  }
};

}  // namespace

void setup_logging(const std::string& level, config::LogFormat format) {
  spdlog::drop("clock");
  auto logger = spdlog::stderr_logger_st("clock");
  if (format == config::LogFormat::json) {
    auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
    formatter->add_flag<JsonMessageFlag>('j').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l","pid":%P,"message":%j})");
    logger->set_formatter(std::move(formatter));
  } else {
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<SafeMessageFlag>('E').set_pattern("clock: %l: %E");
    logger->set_formatter(std::move(formatter));
  }
  logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(logger);
}

}  // namespace clk::output
