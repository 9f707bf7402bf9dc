// Differential test of SPEC §5 ("both backends implement one lock model"): a
// seeded generator plays request sequences (acquire shared/exclusive/slots,
// re-entry, renew, release, forced release, on related names a, a.b, a.b.c
// and b, by three owners) against SQLite and PostgreSQL, and compares the
// normalised outcomes: exit status per step, token order, history event
// kinds. It needs both backends, so it runs with CLOCK_TEST_BACKEND=postgres
// (SQLite is a file in the test directory) and is skipped otherwise.
// CLOCK_DIFF_SEED=N replays one sequence; CLOCK_DIFF_VERBOSE=1 shows each.
#include <chrono>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "harness.hpp"
#include "postgres_tools.hpp"

using namespace clk::test;

namespace {

constexpr int k_sequences = 20;
constexpr int k_steps = 25;

const char* const k_owners[] = {"00000000-0000-4000-8000-000000000000",
                                "11111111-1111-4111-8111-111111111111",
                                "22222222-2222-4222-8222-222222222222"};
const char* const k_resources[] = {"a", "a.b", "a.b.c", "b"};

struct Step {
  std::vector<std::string> args;  // clock's arguments, without --namespace
  std::string text;               // for the report
};

// One sequence of steps, the same for a seed on every backend.
std::vector<Step> generate(unsigned seed) {
  std::mt19937 random(seed);
  auto pick = [&](int n) { return static_cast<int>(random() % static_cast<unsigned>(n)); };
  std::vector<Step> steps;
  for (int i = 0; i < k_steps; ++i) {
    int who = pick(3);
    std::string owner = k_owners[who];
    std::string resource = k_resources[pick(4)];
    std::string name = "o" + std::to_string(who);
    int op = pick(10);
    Step step;
    if (op < 5) {
      step.args = {"acquire", "-n", "-r", resource, "--owner", owner, "--format", "json"};
      int mode = pick(4);
      if (mode == 1)
        step.args.push_back("-s");
      if (mode == 2) {
        step.args.push_back("--slots");
        step.args.push_back(pick(2) == 0 ? "2" : "3");
      }
      step.text = name + " acquire " + resource + (mode == 1 ? " -s" : mode == 2 ? " slots" : "");
    } else if (op < 7) {
      step.args = {"release", "-r", resource, "--owner", owner};
      step.text = name + " release " + resource;
    } else if (op < 9) {
      step.args = {"renew", "-r", resource, "--owner", owner};
      step.text = name + " renew " + resource;
    } else {
      step.args = {"release", "-r", resource, "--force"};
      step.text = "force release " + resource;
    }
    steps.push_back(std::move(step));
  }
  return steps;
}

std::string owner_name(const std::string& owner) {
  for (int i = 0; i < 3; ++i) {
    if (owner == k_owners[i])
      return "o" + std::to_string(i);
  }
  return "?";
}

// What a backend did with a sequence, normalised: tokens become their rank.
struct Outcome {
  std::vector<std::string> steps;    // "exit N [token rank]" per step
  std::vector<std::string> history;  // "event resource owner", oldest first
};

Outcome play(const TestEnv& env, const std::map<std::string, std::string>& database,
             const std::string& ns, const std::vector<Step>& steps) {
  Outcome outcome;
  std::vector<long long> tokens;  // per step, 0 when none
  for (const auto& step : steps) {
    std::vector<std::string> args = step.args;
    args.insert(args.end(), {"--namespace", ns});
    Result result = env.clock(args, database);
    long long token = 0;
    if (result.status == 0 && step.args[0] == "acquire")
      token = parse_acquired(result.out).token();
    tokens.push_back(token);
    outcome.steps.push_back("exit " + std::to_string(result.status));
  }
  std::set<long long> distinct(tokens.begin(), tokens.end());
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] != 0) {
      outcome.steps[i] +=
          " token#" + std::to_string(std::distance(distinct.begin(), distinct.find(tokens[i])));
    }
  }
  Result history =
      env.clock({"history", "--namespace", ns, "--limit", "10000", "--format", "json"}, database);
  REQUIRE_EXIT(history, 0);
  auto parsed = nlohmann::json::parse(history.out);  // kept alive for the loop
  std::vector<nlohmann::json> events(parsed["events"].rbegin(), parsed["events"].rend());
  for (const auto& event : events) {
    outcome.history.push_back(event["event"].get<std::string>() + " " +
                              event["resource"].get<std::string>() + " " +
                              owner_name(event["owner"].get<std::string>()));
  }
  return outcome;
}

std::string describe(const std::vector<Step>& steps, const Outcome& sqlite,
                     const Outcome& postgres) {
  std::ostringstream out;
  out << "step | sqlite | postgres\n";
  for (std::size_t i = 0; i < steps.size(); ++i) {
    out << (sqlite.steps[i] == postgres.steps[i] ? "   " : "!! ") << i << " " << steps[i].text
        << " | " << sqlite.steps[i] << " | " << postgres.steps[i] << "\n";
  }
  out << "history sqlite:\n";
  for (const auto& line : sqlite.history)
    out << "  " << line << "\n";
  out << "history postgres:\n";
  for (const auto& line : postgres.history)
    out << "  " << line << "\n";
  return out.str();
}

}  // namespace

TEST_SUITE("lock model") {
  TEST_CASE("both backends make the same decisions, token order and history for a sequence" *
            doctest::timeout(300) * only_on("postgres")) {
    TestEnv env;
    std::map<std::string, std::string> sqlite = {
        {"CLOCK_DATABASE_URL", "sqlite:" + env.path("differential.db").string()}};
    std::vector<unsigned> seeds;
    if (const char* replay = std::getenv("CLOCK_DIFF_SEED")) {
      seeds.push_back(static_cast<unsigned>(std::stoul(replay)));
    } else {
      unsigned base = std::random_device{}();
      for (int i = 0; i < k_sequences; ++i)
        seeds.push_back(base + static_cast<unsigned>(i));
    }
    std::chrono::duration<double> sqlite_time{0}, postgres_time{0};
    for (unsigned seed : seeds) {
      auto steps = generate(seed);
      std::string ns = "seq" + std::to_string(seed);
      auto started = std::chrono::steady_clock::now();
      Outcome on_sqlite = play(env, sqlite, ns, steps);
      auto halfway = std::chrono::steady_clock::now();
      Outcome on_postgres = play(env, {}, ns, steps);
      sqlite_time += halfway - started;
      postgres_time += std::chrono::steady_clock::now() - halfway;
      bool same = on_sqlite.steps == on_postgres.steps && on_sqlite.history == on_postgres.history;
      if (std::getenv("CLOCK_DIFF_VERBOSE"))
        MESSAGE("seed " << seed << "\n" << describe(steps, on_sqlite, on_postgres));
      if (!same) {
        FAIL_CHECK("the backends differ for seed " << seed << " (replay: CLOCK_DIFF_SEED=" << seed
                                                   << ")\n"
                                                   << describe(steps, on_sqlite, on_postgres));
        break;
      }
    }
    MESSAGE(seeds.size() << " sequences x " << k_steps << " steps: sqlite " << sqlite_time.count()
                         << " s, postgres " << postgres_time.count() << " s");
  }
}
