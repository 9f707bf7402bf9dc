// man clock, GUARANTEES mutual exclusion under real contention: many `clock run` processes
// wrapping a read-pause-rewrite critical section must never overlap, never lose
// an increment, and see strictly increasing fencing tokens.
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "harness.hpp"
#include "sections.hpp"

using namespace clk::test;

TEST_SUITE("stress") {
  TEST_CASE(
      "eight processes running twenty-five critical sections each never overlap and lose no "
      "increment" *
      doctest::timeout(900)) {
    TestEnv env;
    constexpr int k_processes = 8;
    constexpr int k_iterations = 25;
    std::vector<Command> commands(k_processes,
                                  env.shell_command(looping_script("-r counter", k_iterations)));
    std::vector<Result> results = run_all(commands, env.path("output"), 900s);
    for (const auto& result : results)
      CHECK_EXIT(result, 0);

    CHECK(std::stoll("0" + read_file(env.path("counter"))) == k_processes * k_iterations);
    std::vector<Section> sections = read_sections(env.path("log"));
    CHECK(sections.size() == k_processes * k_iterations);
    for (const auto& section : sections) {
      INFO("token: " << section.token);
      REQUIRE(section.token != "-");
    }
    check_sections(sections, true);
  }

  TEST_CASE("holders of an ancestor and of its descendant never overlap" * doctest::timeout(600)) {
    TestEnv env;
    std::vector<Command> commands;
    for (int i = 0; i < 3; ++i)
      commands.push_back(env.shell_command(looping_script("-r tree", 15)));
    for (int i = 0; i < 3; ++i) {
      commands.push_back(env.shell_command(looping_script("-r tree.leaf.twig", 15)));
    }
    std::vector<Result> results = run_all(commands, env.path("output"), 600s);
    for (const auto& result : results)
      CHECK_EXIT(result, 0);

    CHECK(std::stoll("0" + read_file(env.path("counter"))) == 6 * 15);
    std::vector<Section> sections = read_sections(env.path("log"));
    CHECK(sections.size() == 6 * 15);
    // Tokens are per resource, so only the overlap is checked across the two.
    check_sections(sections, false);
  }

  TEST_CASE("a semaphore of two slots admits at most two holders at once" * doctest::timeout(600)) {
    TestEnv env;
    // Each section logs its start and end; at no instant may three be inside.
    std::string script =
        "i=0\n"
        "while [ \"$i\" -lt 15 ]; do\n"
        "  \"$T_CLOCK\" run -r pool --slots 2 -- \"$T_CS\" \"$T_DIR/counter.$$\" \"$T_DIR/log\" 20"
        " || exit 1\n"
        "  i=$((i + 1))\n"
        "done\n";
    std::vector<Command> commands(5, env.shell_command(script));
    std::vector<Result> results = run_all(commands, env.path("output"), 600s);
    for (const auto& result : results)
      CHECK_EXIT(result, 0);

    std::vector<Section> sections = read_sections(env.path("log"));
    REQUIRE(sections.size() == 5 * 15);
    std::vector<std::pair<long long, int>> events;  // (time, +1 start / -1 end), ends first on ties
    for (const auto& section : sections) {
      events.emplace_back(section.start, +1);
      events.emplace_back(section.end, -1);
    }
    std::sort(events.begin(), events.end());
    int inside = 0;
    int most = 0;
    for (const auto& [time, delta] : events) {
      inside += delta;
      most = std::max(most, inside);
    }
    CHECK(most <= 2);
  }
}
