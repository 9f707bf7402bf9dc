// Reading expected_rows(): instants come as integer microseconds since the
// epoch (usec()), so nothing here parses dates.
#include "store/server/expected_rows.hpp"

#include <algorithm>
#include <cstdlib>

#include "error.hpp"
#include "store/server/row_view.hpp"

namespace clk::store {

namespace {

enum Column {
  k_expected_kind,
  k_expected_namespace,
  k_expected_resource,
  k_every_ms,
  k_declared_usec,
  k_at_usec
};

std::int64_t integer(const RowView& row, int column) {
  const char* text = row.at(column);
  if (!text)
    throw Error(ExitCode::internal, "expected_rows: a NULL where a number belongs");
  return std::strtoll(text, nullptr, 10);
}

lock::Instant instant(const RowView& row, int column) {
  return lock::Instant(std::chrono::duration_cast<lock::Instant::duration>(
      std::chrono::microseconds(integer(row, column))));
}

std::string text(const RowView& row, int column) {
  const char* value = row.at(column);
  return value ? value : "";
}

}  // namespace

void ExpectedRows::add(const RowView& row) {
  const std::string kind = text(row, k_expected_kind);
  if (kind == "now") {
    m_now = instant(row, k_at_usec);
    return;
  }
  std::pair<std::string, std::string> key{text(row, k_expected_namespace),
                                          text(row, k_expected_resource)};
  if (kind == "expected") {
    ExpectedRun run{.ns = key.first,
                    .resource = lock::Resource::parse(key.second),
                    .every = std::chrono::milliseconds(integer(row, k_every_ms)),
                    .declared_at = instant(row, k_declared_usec),
                    .successes = {}};
    m_runs.insert_or_assign(key, std::move(run));
  } else if (kind == "success") {
    m_successes.emplace_back(std::move(key), instant(row, k_at_usec));
  }
}

ExpectedRuns ExpectedRows::take() {
  for (auto& [key, at] : m_successes) {
    auto found = m_runs.find(key);
    if (found != m_runs.end())
      found->second.successes.push_back(at);
  }
  ExpectedRuns out;
  out.now = m_now;
  for (auto& [key, run] : m_runs) {
    std::sort(run.successes.begin(), run.successes.end());
    out.runs.push_back(std::move(run));
  }
  return out;
}

}  // namespace clk::store
