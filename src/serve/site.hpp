// The pages of `clock serve`: path → reply. Read-only: every route reads
// the shared snapshot (serve/snapshots.hpp) or history, none writes.
#pragma once

#include <optional>

#include "serve/basic_auth.hpp"
#include "serve/http_module.hpp"
#include "serve/snapshots.hpp"

namespace clk::serve {

struct SiteOptions {
  std::optional<BasicAuth> auth;  // none: no authentication (loopback, or behind a proxy)
  std::optional<std::string> ns;  // the namespace shown; none: all
  std::chrono::milliseconds refresh{5000};
};

// Answers /, /status.json, /history.json, /timeline.json, /metrics and
// /healthz; anything else is 404. /healthz needs no authentication.
Reply answer(Snapshots& snapshots, const SiteOptions& options, const Request& request);

}  // namespace clk::serve
