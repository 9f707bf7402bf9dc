// Reading and checking the critical-section log of the contention tests.
#include "sections.hpp"

#include <algorithm>
#include <sstream>

#include <doctest/doctest.h>

namespace clk::test {

std::vector<Section> read_sections(const fs::path& path) {
  std::vector<Section> sections;
  std::istringstream in(read_file(path));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    Section section;
    fields >> section.start >> section.end >> section.pid >> section.token;
    INFO("log line: " << line);
    REQUIRE_FALSE(fields.fail());
    REQUIRE(section.token != "-");
    sections.push_back(section);
  }
  std::sort(sections.begin(), sections.end(),
            [](const Section& a, const Section& b) { return a.start < b.start; });
  return sections;
}

std::string looping_script(const std::string& run_args, int iterations) {
  return "i=0\n"
         "while [ \"$i\" -lt " +
         std::to_string(iterations) +
         " ]; do\n"
         "  \"$T_CLOCK\" run " +
         run_args +
         " -- \"$T_CS\" \"$T_DIR/counter\" \"$T_DIR/log\" ||\n"
         "    { status=$?; echo \"clock run exited $status on iteration $i\" >&2; exit 1; }\n"
         "  i=$((i + 1))\n"
         "done\n";
}

void check_sections(const std::vector<Section>& sections, bool tokens_increase) {
  int overlaps = 0;
  int regressions = 0;
  for (std::size_t i = 1; i < sections.size(); ++i) {
    const Section& before = sections[i - 1];
    const Section& after = sections[i];
    if (after.start <= before.end && overlaps++ == 0) {
      FAIL_CHECK("critical sections overlap: pid "
                 << before.pid << " [" << before.start << ", " << before.end << "] token "
                 << before.token << " and pid " << after.pid << " token " << after.token
                 << " started at " << after.start);
    }
    if (tokens_increase && std::stoll(after.token) <= std::stoll(before.token) &&
        regressions++ == 0) {
      FAIL_CHECK("token " << after.token << " (pid " << after.pid << ") was granted after token "
                          << before.token << " (pid " << before.pid << ")");
    }
  }
  CHECK(overlaps == 0);
  CHECK(regressions == 0);
}

}  // namespace clk::test
