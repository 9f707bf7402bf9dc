// The critical-section log of the contention tests (written by
// clock_critical_section: "start_ns end_ns pid token" per line) and the
// invariants checked over it.
#pragma once

#include <string>
#include <vector>

#include "harness.hpp"

namespace clk::test {

struct Section {
  long long start = 0;
  long long end = 0;
  long long pid = 0;
  std::string token;
};

// The log's sections, sorted by start; every one must carry a token.
std::vector<Section> read_sections(const fs::path& path);

// `clock run RUN_ARGS -- clock_critical_section counter log`, `iterations`
// times in a row; exits 1 on the first failing run.
std::string looping_script(const std::string& run_args, int iterations);

// No two sections overlap; with `tokens_increase`, every section also has a
// token strictly larger than the one before it (one resource's grant order).
void check_sections(const std::vector<Section>& sections, bool tokens_increase);

}  // namespace clk::test
