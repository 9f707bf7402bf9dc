// Renderers for what the commands print on stdout. They return text; only
// cmd/ writes it out.
#pragma once

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

// `clock history`: newest first, as a table or JSON (packaging/schema/history.schema.json).
std::string render_history(const std::vector<store::HistoryEvent>& events, Format format);

// `clock gc`: what was (or, with --dry-run, would be) removed.
std::string render_gc(const store::GcReport& report, bool dry_run);

}  // namespace clk::output
