// Differential test of man clock, GUARANTEES ("both backends implement one lock model"): a
// seeded generator makes request sequences (acquire shared/exclusive/slots of
// one or two resources, re-entry, renew, release, forced release, short TTLs
// and time passing, background waiters, cycles) on related names a, a.b,
// a.b.c and b in two namespaces by three owners, and plays each against the
// reference model (lock_model_reference.hpp, deciding with lock::decide),
// SQLite, PostgreSQL and MariaDB. The normalised outcomes must be equal: exit status
// per step, token order, which waiters were granted when, queue order, and
// the history events of each step. It needs PostgreSQL, so it runs with
// CLOCK_TEST_BACKEND=postgres (SQLite is a file in the test directory) and is
// skipped otherwise; MariaDB is the fourth player when with-mariadb.sh runs a
// server (CLOCK_TEST_MARIADB_URL; a database of the test's own on it), and
// left out, saying so, when none runs (a failure under CI=true). CLOCK_DIFF_SEED=N replays one
// sequence; CLOCK_DIFF_SEQUENCES=N plays N; CLOCK_DIFF_VERBOSE=1 shows each;
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "common_helpers.hpp"
#include "harness.hpp"
#include "lock_model_reference.hpp"
#include "mariadb_tools.hpp"

using namespace clk::test;
using clk::test::model::Op;
using clk::test::model::Step;
using clk::test::model::StepResult;

namespace {

// 12 x 25 steps took 35-45 s on two busy cores with two stores (CI's budget
// is 90 s); MariaDB, the third, adds about 40% (a sequence: SQLite 10 s,
// PostgreSQL 21 s, MariaDB 12 s under ASan at load 14), so 9 keep the time.
// Each run draws new seeds, so runs add up.
constexpr int k_sequences = 9;
constexpr std::chrono::seconds k_budget{200};
constexpr int k_steps = 25;
const char* const k_resources[] = {"a", "a.b", "a.b.c", "b"};
// A short lease's TTL: longer than the two steps between its grant and the
// `time passes` step that follows it, so it never lapses early.
constexpr milliseconds k_short_ttl{500};

// Owners and namespaces are the sequence's own, so that nothing a sequence
// leaves behind (queue entries of killed waiters) meets the next one.
struct Sequence {
  unsigned seed = 0;
  std::vector<std::string> namespaces, owners;
  std::vector<Step> steps;
};

std::string owner_id(unsigned seed, int index) {
  char text[37];
  std::snprintf(text, sizeof text, "%08x-%04x-4000-8000-%012x", seed, index, index);
  return text;
}

// One random step that the model says is worth playing: owners with a
// queued request only release or renew (their waiting process is busy).
class Generator {
 public:
  Generator(unsigned seed, model::Reference& reference) : m_random(seed), m_reference(reference) {}

  std::vector<Step> next(int steps_left) { return candidate(steps_left); }

 private:
  std::vector<Step> candidate(int steps_left) {
    if (pick(10) == 0 && steps_left >= 3 && !m_reference.anyone_queued())
      return time_block();
    if (pick(4) == 0) {
      if (auto closer = cycle_closer())
        return {*closer};
    }
    if (pick(3) == 0) {
      if (auto unblocker = unblock())
        return {*unblocker};
    }
    return {one_step()};
  }

  int pick(int n) { return static_cast<int>(m_random() % static_cast<unsigned>(n)); }
  std::string resource() { return k_resources[pick(4)]; }

  Step acquire(Op op) {
    Step step;
    step.op = op;
    step.owner = free_owner();
    step.ns = pick(5) == 0 ? 1 : 0;
    step.resources = {resource()};
    if (pick(4) == 0)
      step.resources.push_back(resource());
    int mode = pick(4);
    if (mode == 1)
      step.mode = clk::lock::Mode::shared;
    if (mode == 2)
      step.slots = 2 + pick(2);
    return step;
  }

  // An owner without a queued request (there is always one: at most two wait).
  int free_owner() {
    for (int owner = pick(3);; owner = (owner + 1) % 3) {
      if (!m_reference.owner_queued(owner))
        return owner;
    }
  }

  Step one_step() {
    int op = pick(20);
    if (op < 9)
      return acquire(Op::acquire);
    if (op < 12 && m_reference.waits().size() < 2)
      return acquire(Op::wait);
    Step step;
    step.op = op < 14 ? Op::release : op < 17 ? Op::renew : Op::force;
    step.owner = pick(3);
    step.ns = pick(5) == 0 ? 1 : 0;
    step.resources = {resource()};
    auto live = m_reference.live(step.ns);
    if (!live.empty() && pick(2) == 0) {  // mostly about a lease that exists
      const auto& lease = live[static_cast<std::size_t>(pick(static_cast<int>(live.size())))];
      step.owner = lease.owner;
      step.resources = {lease.resource};
    }
    return step;
  }

  // Leases with a short TTL, then the time that makes them expire.
  std::vector<Step> time_block() {
    std::vector<Step> block;
    for (int i = 0, n = 1 + pick(2); i < n; ++i) {
      Step step = acquire(Op::acquire);
      step.short_ttl = true;
      block.push_back(step);
    }
    Step passes;
    passes.op = Op::time_passes;
    block.push_back(passes);
    return block;
  }

  // Asks, for another owner holding a lease, for a lease that a queued
  // owner holds: a deadlock (76) when that other owner is in the queued
  // request's way, a plain refusal or wait otherwise.
  std::optional<Step> cycle_closer() {
    for (const auto& wait : m_reference.waits()) {
      for (const auto& mine : m_reference.live(wait.ns)) {
        if (mine.owner != wait.owner)
          continue;
        for (const auto& other : m_reference.live(wait.ns)) {
          if (other.owner == wait.owner || m_reference.owner_queued(other.owner))
            continue;
          Step step;
          step.op = pick(2) == 0 && m_reference.waits().size() < 2 ? Op::wait : Op::acquire;
          step.owner = other.owner;
          step.ns = wait.ns;
          step.resources = {mine.resource};
          return step;
        }
      }
    }
    return std::nullopt;
  }

  // Releases, or forces, a lease in a queued request's way, so that waiters
  // get their grants during the sequence, not only refusals.
  std::optional<Step> unblock() {
    for (const auto& wait : m_reference.waits()) {
      for (const auto& lease : m_reference.live(wait.ns)) {
        auto held = clk::lock::Resource::parse(lease.resource);
        bool in_the_way =
            std::any_of(wait.resources.begin(), wait.resources.end(), [&](const std::string& name) {
              return held.is_related_to(clk::lock::Resource::parse(name));
            });
        if (lease.owner == wait.owner || !in_the_way)
          continue;
        Step step;
        step.op = pick(3) == 0 ? Op::force : Op::release;
        step.owner = lease.owner;
        step.ns = wait.ns;
        step.resources = {lease.resource};
        return step;
      }
    }
    return std::nullopt;
  }

  std::mt19937 m_random;
  model::Reference& m_reference;
};

Sequence generate(unsigned seed) {
  Sequence sequence;
  sequence.seed = seed;
  sequence.namespaces = {"seq" + std::to_string(seed), "seq" + std::to_string(seed) + "-other"};
  for (int i = 0; i < 3; ++i)
    sequence.owners.push_back(owner_id(seed, i));
  model::Reference reference(sequence.namespaces, sequence.owners);
  Generator generator(seed, reference);
  while (static_cast<int>(sequence.steps.size()) < k_steps) {
    for (auto& step : generator.next(k_steps - static_cast<int>(sequence.steps.size()))) {
      reference.play(static_cast<int>(sequence.steps.size()), step);
      sequence.steps.push_back(std::move(step));
    }
  }
  return sequence;
}

std::string describe_step(const Step& step) {
  static const char* const names[] = {"acquire", "wait",  "release",
                                      "renew",   "force", "time passes"};
  std::string text = step.op == Op::time_passes || step.op == Op::force
                         ? ""
                         : "o" + std::to_string(step.owner) + " ";
  text += names[static_cast<int>(step.op)];
  for (const auto& resource : step.resources)
    text += " " + resource;
  if (step.mode == clk::lock::Mode::shared)
    text += " -s";
  if (step.slots)
    text += " slots " + std::to_string(step.slots);
  if (step.short_ttl)
    text += " ttl " + std::to_string(k_short_ttl.count()) + "ms";
  if (step.ns)
    text += " (ns1)";
  return text;
}

std::vector<std::string> arguments(const Sequence& sequence, const Step& step) {
  std::vector<std::string> args;
  const char* const commands[] = {"acquire", "acquire", "release", "renew", "release"};
  args.push_back(commands[static_cast<int>(step.op)]);
  for (const auto& resource : step.resources)
    args.insert(args.end(), {"-r", resource});
  args.insert(args.end(), {"--namespace", sequence.namespaces.at(step.ns)});
  if (step.op == Op::force) {
    args.push_back("--force");
    return args;
  }
  // Every owner of a sequence has the same secret: what is compared is the
  // lock model, and each owner proves itself.
  args.insert(args.end(),
              {"--owner", sequence.owners.at(step.owner) + ".5ec2e75ec2e75ec2e75ec2e75ec2e75e"});
  if (step.op == Op::acquire || step.op == Op::wait) {
    args.insert(args.end(), {"--format", "json"});
    if (step.op == Op::acquire)
      args.push_back("-n");
    else
      args.insert(args.end(), {"-w", "30s"});
    if (step.mode == clk::lock::Mode::shared)
      args.push_back("-s");
    if (step.slots)
      args.insert(args.end(), {"--slots", std::to_string(step.slots)});
    if (step.short_ttl)
      args.insert(args.end(), {"--ttl", std::to_string(k_short_ttl.count()) + "ms"});
  }
  return args;
}

// The step after which each wait step's request is over (granted, refused),
// in the model's play; k_steps while still queued at the end.
std::map<int, int> wait_ends(const Sequence& sequence, const std::vector<StepResult>& model) {
  std::map<int, int> ends;
  for (int i = 0; i < k_steps; ++i) {
    if (sequence.steps[i].op == Op::wait)
      ends[i] = model[i].exit ? i : k_steps;
    for (const auto& woken : model[i].woken)
      ends[woken.step] = i;
  }
  return ends;
}

// Plays a sequence on one backend. The model's play serves only to know
// when a background waiter is due to finish, so that the player waits for
// that rather than for a moment that might come a little late.
class BackendPlayer {
 public:
  BackendPlayer(const TestEnv& env, std::map<std::string, std::string> database,
                const Sequence& sequence, const std::vector<StepResult>& model)
      : m_env(env),
        m_database(std::move(database)),
        m_sequence(sequence),
        m_ends(wait_ends(sequence, model)) {}

  std::vector<StepResult> play() {
    std::vector<StepResult> results(k_steps);
    for (int i = 0; i < k_steps; ++i) {
      run(i, results[i]);
      settle(i, results);
      m_last_event_ids.push_back(last_event_id());
      if (!m_waiting.empty())  // else nobody queues: -n requests never do
        results[i].queue = queue();
    }
    // Waiters still queued are killed: their entries lapse unseen, since the
    // next sequence has other owners and namespaces.
    m_waiting.clear();
    add_history(results);
    return results;
  }

  // False when the machine was too slow for a short lease to outlive the
  // steps before its `time passes`: the outcome then says nothing.
  bool judgeable() const { return !m_too_slow; }

 private:
  nlohmann::json clock_json(const std::vector<std::string>& args) const {
    Result result = m_env.clock(args, m_database);
    REQUIRE_MESSAGE(!result.out.empty(), result.describe());
    return nlohmann::json::parse(result.out);
  }

  void run(int index, StepResult& result) {
    const Step& step = m_sequence.steps[index];
    if (step.short_ttl && !m_first_short)
      m_first_short = Clock::now();
    if (step.op == Op::time_passes) {
      m_too_slow = m_too_slow || Clock::now() - *m_first_short > k_short_ttl - 150ms;
      m_first_short.reset();
      await_short_leases_expired();
      result.exit = 0;
      return;
    }
    auto args = arguments(m_sequence, step);
    if (step.op == Op::wait) {
      m_waiting[index] = m_env.spawn(m_env.clock_command(args, m_database));
      return;
    }
    Result ran = m_env.clock(args, m_database);
    result.exit = ran.status;
    if (ran.status == 0 && step.op == Op::acquire) {
      for (auto token : parse_acquired(ran.out).tokens)
        result.tokens.push_back(token);
    }
  }

  // Waits until each background waiter has finished or, unless the model
  // says it is due to finish by now, is visibly queued; collects what the
  // finished ones printed.
  void settle(int index, std::vector<StepResult>& results) {
    for (auto it = m_waiting.begin(); it != m_waiting.end();) {
      int step = it->first;
      Process& process = *it->second;
      bool due = m_ends.at(step) <= index;
      await([&] { return !process.running() || (!due && visibly_queued(step)); }, 5s, 50ms);
      if (process.running()) {
        ++it;
        continue;
      }
      Result finished = process.wait();
      std::vector<clk::lock::Token> tokens;
      if (finished.status == 0) {
        for (auto token : parse_acquired(finished.out).tokens)
          tokens.push_back(token);
      }
      if (step == index) {
        results[index].exit = finished.status;
        results[index].tokens = tokens;
      } else {
        results[index].woken.push_back({step, finished.status, tokens});
      }
      it = m_waiting.erase(it);
    }
  }

  bool visibly_queued(int step) const {
    const Step& request = m_sequence.steps[step];
    auto status = clock_json({"status", "--all", "--format", "json"});
    std::size_t entries = 0;
    for (const auto& waiter : status["waiters"]) {
      entries += waiter["owner"] == m_sequence.owners.at(request.owner) &&
                 waiter["namespace"] == m_sequence.namespaces.at(request.ns);
    }
    return entries == clk::lock::canonical_resources(request.resources).size();
  }

  // Time passes until every lease of the sequence with a short TTL has
  // expired on the database's clock (a lease with the default TTL has
  // minutes left).
  void await_short_leases_expired() const {
    bool expired = await(
        [&] {
          auto status = clock_json({"status", "--all", "--format", "json"});
          for (const auto& holder : status["holders"]) {
            if (ours(holder["namespace"]) && !holder["expired"].get<bool>() &&
                !holder["expires_in_ms"].is_null() &&
                holder["expires_in_ms"].get<long long>() < 10'000)
              return false;
          }
          return true;
        },
        10s, 100ms);
    REQUIRE_MESSAGE(expired, "the short leases did not expire within 10 s");
  }

  bool ours(const std::string& ns) const {
    return std::find(m_sequence.namespaces.begin(), m_sequence.namespaces.end(), ns) !=
           m_sequence.namespaces.end();
  }

  std::string ns_index(const std::string& ns) const {
    auto found = std::find(m_sequence.namespaces.begin(), m_sequence.namespaces.end(), ns);
    return "ns" + std::to_string(found - m_sequence.namespaces.begin());
  }

  std::string owner_index(const std::string& owner) const {
    auto found = std::find(m_sequence.owners.begin(), m_sequence.owners.end(), owner);
    return "o" + std::to_string(found - m_sequence.owners.begin());
  }

  long long last_event_id() const {
    auto history = clock_json({"history", "--limit", "1", "--format", "json"});
    return history["events"].empty() ? 0 : history["events"][0]["id"].get<long long>();
  }

  // The sequence's history, oldest first, each event to the step after which
  // it was there (a step's own events are in no particular order).
  void add_history(std::vector<StepResult>& results) const {
    auto history = clock_json({"history", "--limit", "10000", "--format", "json"});
    for (auto event = history["events"].rbegin(); event != history["events"].rend(); ++event) {
      if (!ours((*event)["namespace"]))
        continue;
      auto id = (*event)["id"].get<long long>();
      auto step = std::lower_bound(m_last_event_ids.begin(), m_last_event_ids.end(), id) -
                  m_last_event_ids.begin();
      results.at(static_cast<std::size_t>(std::min<long>(step, k_steps - 1)))
          .events.push_back(
              (*event)["event"].get<std::string>() + " " + ns_index((*event)["namespace"]) + " " +
              (*event)["resource"].get<std::string>() + " " + owner_index((*event)["owner"]));
    }
  }

  std::vector<std::string> queue() const {
    auto status = clock_json({"status", "--all", "--format", "json"});
    std::vector<std::string> lines;
    for (const auto& waiter : status["waiters"]) {
      if (!ours(waiter["namespace"]))
        continue;
      int slots = waiter["slots"].get<int>();
      lines.push_back(ns_index(waiter["namespace"]) + " " + owner_index(waiter["owner"]) + " " +
                      waiter["resource"].get<std::string>() + " " +
                      waiter["mode"].get<std::string>() +
                      (slots ? " slots " + std::to_string(slots) : ""));
    }
    return lines;
  }

  const TestEnv& m_env;
  std::map<std::string, std::string> m_database;
  const Sequence& m_sequence;
  std::vector<long long> m_last_event_ids;  // the newest history event after each step
  std::map<int, int> m_ends;
  std::map<int, std::unique_ptr<Process>> m_waiting;  // by wait step
  std::optional<Clock::time_point> m_first_short;     // the start of the current short TTLs
  bool m_too_slow = false;
};

std::vector<StepResult> play_model(const Sequence& sequence) {
  model::Reference reference(sequence.namespaces, sequence.owners);
  std::vector<StepResult> results;
  for (int i = 0; i < k_steps; ++i)
    results.push_back(reference.play(i, sequence.steps[i]));
  return results;
}

// One line per step, equal for equal behaviour: tokens become their rank in
// the sequence; what happened within one step (events, waiters granted
// together) is sorted, since its order is the stores' own business; the
// queue is shown once the sequence has had a waiter.
std::vector<std::string> normalise(const Sequence& sequence,
                                   const std::vector<StepResult>& results) {
  std::set<clk::lock::Token> tokens;
  for (const auto& result : results) {
    tokens.insert(result.tokens.begin(), result.tokens.end());
    for (const auto& woken : result.woken)
      tokens.insert(woken.tokens.begin(), woken.tokens.end());
  }
  auto rank = [&](clk::lock::Token token) {
    return "#" + std::to_string(std::distance(tokens.begin(), tokens.find(token)));
  };
  std::vector<std::string> lines;
  bool waited = false;
  for (int i = 0; i < k_steps; ++i) {
    const auto& result = results[i];
    std::string line = result.exit ? "exit " + std::to_string(*result.exit) : "queued";
    for (auto token : result.tokens)
      line += " " + rank(token);
    if (!result.woken.empty()) {
      std::vector<std::string> who, ranks;
      for (const auto& woken : result.woken) {
        who.push_back("s" + std::to_string(woken.step) + " exit " + std::to_string(woken.exit));
        for (auto token : woken.tokens)
          ranks.push_back(rank(token));
      }
      std::sort(who.begin(), who.end());
      std::sort(ranks.begin(), ranks.end());
      line += "; woke";
      for (const auto& text : who)
        line += " [" + text + "]";
      for (const auto& text : ranks)
        line += " " + text;
    }
    auto events = result.events;
    std::sort(events.begin(), events.end());
    for (const auto& event : events)
      line += "; " + event;
    waited = waited || sequence.steps[i].op == Op::wait;
    if (waited) {
      line += "; queue:";
      for (const auto& entry : result.queue)
        line += " [" + entry + "]";
    }
    lines.push_back(line);
  }
  return lines;
}

// Tallies what a sequence exercised, as the model played it.
void count(const Sequence& sequence, const std::vector<StepResult>& model,
           std::map<std::string, int>& seen) {
  for (int i = 0; i < k_steps; ++i) {
    const Step& step = sequence.steps[i];
    seen["steps with two resources"] += step.resources.size() > 1;
    seen["time passes"] += step.op == Op::time_passes;
    seen["deadlocks (76)"] += model[i].exit == 76;
    seen["usage refusals (64)"] += model[i].exit == 64;
    seen["refused -n (75)"] += model[i].exit == 75;
    seen["waits queued"] += step.op == Op::wait && !model[i].exit;
    seen["waiters granted later"] += static_cast<int>(model[i].woken.size());
    seen["steps with a queue of two or more"] += model[i].queue.size() >= 2;
    for (const auto& event : model[i].events)
      ++seen["history " + event.substr(0, event.find(' '))];
  }
}

struct Played {
  std::string name;
  std::vector<std::string> lines;
};

std::string describe(const Sequence& sequence, const std::vector<Played>& players) {
  std::ostringstream out;
  for (int i = 0; i < k_steps; ++i) {
    bool same = std::all_of(players.begin(), players.end(),
                            [&](const Played& p) { return p.lines[i] == players[0].lines[i]; });
    out << (same ? "   " : "!! ") << i << " " << describe_step(sequence.steps[i]) << "\n";
    for (const auto& player : players) {
      if (!same || &player == &players[0])
        out << "      " << player.name << ": " << player.lines[i] << "\n";
    }
  }
  return out.str();
}

std::vector<unsigned> seeds() {
  if (const char* replay = std::getenv("CLOCK_DIFF_SEED"))
    return {static_cast<unsigned>(std::stoul(replay))};
  int count = k_sequences;
  if (const char* sequences = std::getenv("CLOCK_DIFF_SEQUENCES"))
    count = std::stoi(sequences);
  unsigned base = std::random_device{}();
  std::vector<unsigned> seeds;
  for (int i = 0; i < count; ++i)
    seeds.push_back(base + static_cast<unsigned>(i));
  return seeds;
}

}  // namespace

TEST_SUITE("lock model") {
  TEST_CASE(
      "the model and the backends make the same decisions, token order, queue order and "
      "history for a sequence" *
      doctest::timeout(300) * only_on("postgres")) {
    TestEnv env;
    std::map<std::string, std::string> sqlite = {
        {"CLOCK_DATABASE_URL", "sqlite:" + env.path("differential.db").string()}};
    // MariaDB: a database of this test's own on the server of with-mariadb.sh.
    std::unique_ptr<maria::Database> mariadb_database;
    std::map<std::string, std::string> mariadb;
    if (maria::server_available()) {
      mariadb_database = std::make_unique<maria::Database>(env.path("output"));
      mariadb["CLOCK_DATABASE_URL"] = mariadb_database->url();
    } else if (running_in_ci()) {
      FAIL(
          "CLOCK_TEST_MARIADB_URL is not set, and CI requires MariaDB in the differential "
          "test: run it under tests/helpers/with-mariadb.sh");
    } else {
      MESSAGE(
          "MariaDB left out: CLOCK_TEST_MARIADB_URL is not set (run the test under "
          "tests/helpers/with-mariadb.sh)");
    }
    auto started = std::chrono::steady_clock::now();
    std::map<std::string, std::chrono::duration<double>> time_on;
    auto all = seeds();
    std::map<std::string, int> seen;  // what the sequences exercised, for the summary
    int played = 0;
    for (unsigned seed : all) {
      // A loaded machine (an ASan run beside three lanes) plays a sequence in
      // up to 45 s: stop starting new ones after 200 s, within ctest's 300,
      // and say how many were compared.
      if (played > 0 && std::chrono::steady_clock::now() - started > k_budget) {
        MESSAGE("time budget spent: " << played << " of " << all.size() << " sequences played");
        break;
      }
      ++played;
      Sequence sequence = generate(seed);
      auto model = play_model(sequence);
      count(sequence, model, seen);
      std::vector<Played> players = {{"model", normalise(sequence, model)}};
      bool judgeable = true;
      auto play = [&](const std::string& name, const std::map<std::string, std::string>& database) {
        auto before = std::chrono::steady_clock::now();
        BackendPlayer player(env, database, sequence, model);
        auto results = player.play();
        time_on[name] += std::chrono::steady_clock::now() - before;
        players.push_back({name, normalise(sequence, results)});
        judgeable = judgeable && player.judgeable();
      };
      play("sqlite", sqlite);
      play("postgres", {});
      if (mariadb_database)
        play("mariadb", mariadb);
      bool same = std::all_of(players.begin(), players.end(),
                              [&](const Played& p) { return p.lines == players[0].lines; });
      if (std::getenv("CLOCK_DIFF_VERBOSE"))
        MESSAGE("seed " << seed << "\n" << describe(sequence, players));
      if (!judgeable) {
        MESSAGE("seed " << seed << " not compared: a short lease may have expired early");
        ++seen["sequences not compared (too slow)"];
        continue;
      }
      if (!same) {
        FAIL_CHECK("the model and the backends differ for seed "
                   << seed << " (replay: CLOCK_DIFF_SEED=" << seed << ")\n"
                   << describe(sequence, players));
        break;
      }
    }
    std::chrono::duration<double> total = std::chrono::steady_clock::now() - started;
    std::ostringstream summary;
    for (const auto& [name, seconds] : time_on)
      summary << ", " << name << " " << seconds.count() << " s";
    for (const auto& [what, times] : seen)
      summary << "\n  " << what << ": " << times;
    MESSAGE(played << " sequences x " << k_steps << " steps in " << total.count() << " s"
                   << summary.str());
  }
}
