// Renderers for what the commands print on stdout. They return text; only
// cmd/ writes it out.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "store/store.hpp"

namespace clk::output {

enum class Format { text, json, shell, table, prometheus, nagios };

// `clock acquire`: the owner id and the tokens, as text, JSON or shell exports.
std::string render_grants(const lock::OwnerCredential& owner,
                          const std::vector<store::Grant>& grants, Format format);

// `clock status`: holders and waiters, as a table (coloured if `colour`), JSON
// (schema: packaging/schema/status.schema.json) or Prometheus text.
std::string render_status(const store::Snapshot& snapshot, Format format, bool colour = false);

// render_status(snapshot, Format::json) for a caller that has no further use
// of the holders (clock serve's refresh): each is moved out of `snapshot` and
// freed once written, so that the rows and the text are not both whole in
// memory; `every_thousand`, if set, is called after each 1,000 holders (to
// give the freed memory back). The holders are left moved-from.
std::string render_status_json_draining(store::Snapshot& snapshot,
                                        const std::function<void()>& every_thousand);

// `clock history`: newest first, as a table or JSON (packaging/schema/history.schema.json).
std::string render_history(const std::vector<store::HistoryEvent>& events, Format format);

// `clock gc`: what was (or, with --dry-run, would be) removed.
std::string render_gc(const store::GcReport& report, bool dry_run);

}  // namespace clk::output
