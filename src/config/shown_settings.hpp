// The effective settings as `clock config` shows them: each key of the
// config file with its value and where that value came from (man clock, ENVIRONMENT).
#pragma once

#include <string>
#include <vector>

#include "config/settings.hpp"

namespace clk::config {

struct ShownSetting {
  std::string key;     // as in the config file: "database", "lock.ttl"
  std::string value;   // as text, a password masked; "" for none
  std::string origin;  // origin_of(settings, key)
};

// Every key of the config file (config/clock.toml's order) with its
// effective value and origin, then the config file itself and the owner id
// of CLOCK_OWNER or --owner (never its secret).
std::vector<ShownSetting> shown_settings(const Settings& settings);

}  // namespace clk::config
