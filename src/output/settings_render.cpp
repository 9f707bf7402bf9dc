// Renders `clock config`'s list, as `git config --show-origin` shows its own.
#include "output/settings_render.hpp"

#include <nlohmann/json.hpp>

#include "output/text.hpp"

namespace clk::output {

std::string render_settings(const std::vector<config::ShownSetting>& settings, Format format) {
  if (format == Format::json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& setting : settings) {
      list.push_back({{"key", setting.key}, {"value", setting.value}, {"origin", setting.origin}});
    }
    return list.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& setting : settings) {
    rows.push_back({setting.key, escape_for_terminal(setting.value.empty() ? "-" : setting.value),
                    escape_for_terminal(setting.origin)});
  }
  return table({"KEY", "VALUE", "ORIGIN"}, rows);
}

}  // namespace clk::output
