// man clock, DESCRIPTION as a model checked against the real binary: random mixes of
// namespaces, related and look-alike resources, shared, exclusive and
// semaphore requests, several resources at once; each critical section logs
// what it held and when on the machine's monotonic clock, and a checker proves
// that no two conflicting sections met and no semaphore held more than N. Also
// fair queueing against a stream of shared holders, deadlock between two
// `clock run`s, whole-segment traps and all-or-nothing with mixed modes.
#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <time.h>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "harness.hpp"

using namespace clk::test;

namespace {

// ---------------------------------------------------------------- the model

// One critical section: what the test asked for (from the recorder's label)
// and what `clock run` told the child it held (CLOCK_RESOURCE, CLOCK_TOKEN).
struct ModelSection {
  std::string id;
  std::string ns;                  // "-" for the global namespace
  std::string mode = "exclusive";  // or "shared"; a semaphore is exclusive with slots > 0
  int slots = 0;
  std::vector<std::string> resources;  // as requested
  long long start = 0;                 // CLOCK_MONOTONIC ns, inside the child
  long long end = 0;
  std::vector<std::string> granted;  // CLOCK_RESOURCE
  std::vector<long long> tokens;     // CLOCK_TOKEN, in the order of `granted`
};

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, separator))
    out.push_back(item);
  return out;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items)
    out += (out.empty() ? "" : ",") + item;
  return out;
}

// Equal, or one an ancestor of the other by whole segments.
bool related(const std::string& a, const std::string& b) {
  auto below = [](const std::string& descendant, const std::string& ancestor) {
    return descendant.size() > ancestor.size() &&
           descendant.compare(0, ancestor.size(), ancestor) == 0 &&
           descendant[ancestor.size()] == '.';
  };
  return a == b || below(a, b) || below(b, a);
}

// Whether `a` holding `ra` and `b` holding `rb` at one instant breaks man clock, DESCRIPTION.
// Holders of one semaphore do not conflict pairwise; their number is checked apart.
bool claims_conflict(const ModelSection& a, const std::string& ra, const ModelSection& b,
                     const std::string& rb) {
  if (a.ns != b.ns || !related(ra, rb))
    return false;
  if (a.slots > 0 && b.slots > 0 && ra == rb)
    return false;
  return !(a.mode == "shared" && b.mode == "shared");
}

// The first pair of claims by which two sections conflict, if any.
std::optional<std::pair<std::string, std::string>> conflict_between(const ModelSection& a,
                                                                    const ModelSection& b) {
  for (const auto& ra : a.resources) {
    for (const auto& rb : b.resources) {
      if (claims_conflict(a, ra, b, rb))
        return std::make_pair(ra, rb);
    }
  }
  return std::nullopt;
}

bool any_related(const ModelSection& a, const ModelSection& b) {
  for (const auto& ra : a.resources) {
    for (const auto& rb : b.resources) {
      if (related(ra, rb))
        return true;
    }
  }
  return false;
}

bool overlap(const ModelSection& a, const ModelSection& b) {
  return !(a.end < b.start || b.end < a.start);
}

std::optional<long long> token_of(const ModelSection& section, const std::string& resource) {
  for (std::size_t i = 0; i < section.granted.size() && i < section.tokens.size(); ++i) {
    if (section.granted[i] == resource)
      return section.tokens[i];
  }
  return std::nullopt;
}

std::string describe_section(const ModelSection& s) {
  std::ostringstream out;
  out << s.id << " [ns " << s.ns << ", " << s.mode;
  if (s.slots > 0)
    out << "/" << s.slots << " slots";
  out << ", " << joined(s.resources) << ", " << s.start << ".." << s.end << "]";
  return out.str();
}

struct ModelReport {
  std::vector<std::string> violations;
  int compatible_overlaps = 0;  // pairs of related sections that legitimately ran together
  int close_handovers = 0;      // conflicting pairs less than 50 ms apart: one likely waited
  std::map<std::string, int> semaphore_peak;  // "ns:resource" → most holders at once
};

// Pairwise: conflicting sections never overlap, and for one resource the later
// of two conflicting grants has the larger fencing token.
void check_pairs(const std::vector<ModelSection>& sections, ModelReport& report) {
  for (std::size_t i = 0; i < sections.size(); ++i) {
    for (std::size_t j = i + 1; j < sections.size(); ++j) {
      const ModelSection& a = sections[i];
      const ModelSection& b = sections[j];
      auto conflict = conflict_between(a, b);
      if (!conflict) {
        report.compatible_overlaps += a.ns == b.ns && overlap(a, b) && any_related(a, b);
        continue;
      }
      if (overlap(a, b)) {
        report.violations.push_back("conflicting sections overlap (" + conflict->first + " / " +
                                    conflict->second + "): " + describe_section(a) + " and " +
                                    describe_section(b));
        continue;
      }
      const ModelSection& first = a.start < b.start ? a : b;
      const ModelSection& second = a.start < b.start ? b : a;
      report.close_handovers += second.start - first.end < 50'000'000;
      for (const auto& r : first.resources) {
        auto t1 = token_of(first, r);
        auto t2 = token_of(second, r);
        if (t1 && t2 && claims_conflict(first, r, second, r) && *t2 <= *t1) {
          report.violations.push_back("token of " + r + " went from " + std::to_string(*t1) + " (" +
                                      describe_section(first) + ") to " + std::to_string(*t2) +
                                      " (" + describe_section(second) + ")");
        }
      }
    }
  }
}

// Per semaphore: at most N holders at any instant, and one N for all of them.
void check_semaphores(const std::vector<ModelSection>& sections, ModelReport& report) {
  std::map<std::string, std::vector<const ModelSection*>> holders;
  for (const auto& section : sections) {
    if (section.slots > 0) {
      for (const auto& r : section.resources)
        holders[section.ns + ":" + r].push_back(&section);
    }
  }
  for (const auto& [key, list] : holders) {
    int slots = list.front()->slots;
    std::vector<std::pair<long long, int>> events;  // starts before ends at one instant
    for (const ModelSection* section : list) {
      if (section->slots != slots) {
        report.violations.push_back("semaphore " + key + " used with " + std::to_string(slots) +
                                    " and " + std::to_string(section->slots) + " slots");
      }
      events.emplace_back(section->start, 0);
      events.emplace_back(section->end, 1);
    }
    std::sort(events.begin(), events.end());
    int inside = 0, peak = 0;
    for (const auto& [time, kind] : events) {
      inside += kind == 0 ? 1 : -1;
      if (inside > slots && peak <= slots) {
        report.violations.push_back("semaphore " + key + " of " + std::to_string(slots) +
                                    " slots had " + std::to_string(inside) +
                                    " holders at once at " + std::to_string(time));
      }
      peak = std::max(peak, inside);
    }
    report.semaphore_peak[key] = peak;
  }
}

ModelReport check_model(const std::vector<ModelSection>& sections) {
  ModelReport report;
  check_pairs(sections, report);
  check_semaphores(sections, report);
  return report;
}

// ---------------------------------------------------------------- the recorder's log

std::string recorder_binary() {
  if (const char* path = std::getenv("CLOCK_SECTION_RECORDER"); path && *path)
    return path;
  std::error_code error;
  fs::path self = fs::read_symlink("/proc/self/exe", error);
  return ((error ? fs::current_path() : self.parent_path()) / "clock_section_recorder").string();
}

long long monotonic_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1'000'000'000LL + ts.tv_nsec;
}

// One line of clock_section_recorder: "start end pid resources tokens LABEL…".
struct LogLine {
  long long start = 0, end = 0;
  std::string resources, tokens;
  std::vector<std::string> label;
};

std::vector<LogLine> read_log(const fs::path& path) {
  std::vector<LogLine> lines;
  std::istringstream in(read_file(path));
  std::string text;
  while (std::getline(in, text)) {
    std::istringstream fields(text);
    LogLine line;
    long long pid = 0;
    fields >> line.start >> line.end >> pid >> line.resources >> line.tokens;
    INFO("log line: " << text);
    REQUIRE_FALSE(fields.fail());
    for (std::string word; fields >> word;)
      line.label.push_back(word);
    lines.push_back(line);
  }
  return lines;
}

// A section from a log line labelled "ID NS MODE SLOTS RES,RES…".
ModelSection section_of(const LogLine& line) {
  INFO("label: " << joined(line.label));
  REQUIRE(line.label.size() == 5);
  ModelSection section;
  section.id = line.label[0];
  section.ns = line.label[1];
  section.mode = line.label[2];
  section.slots = std::stoi(line.label[3]);
  section.resources = split(line.label[4], ',');
  section.start = line.start;
  section.end = line.end;
  if (line.resources != "-")
    section.granted = split(line.resources, ',');
  if (line.tokens != "-") {
    for (const auto& token : split(line.tokens, ','))
      section.tokens.push_back(std::stoll(token));
  }
  return section;
}

// ---------------------------------------------------------------- the random plan

struct PlannedOp {
  std::string id, ns, mode = "exclusive";
  int slots = 0;
  std::vector<std::string> resources;
  int hold_ms = 3;
};

// Related chains, look-alikes (job_1 / jobX1.y, foo / foobar, a-1 / a-10) and
// a semaphore `pool` that always has 2 slots, with a plain lock below it.
const std::vector<std::string> k_plain_resources = {"a",   "a.b",     "a.b.c",   "a.c",   "b",
                                                    "b.x", "job_1",   "jobX1.y", "foo",   "foobar",
                                                    "a-1", "a-1.b_2", "a-10",    "pool.x"};

PlannedOp random_op(std::mt19937_64& random, const std::string& id) {
  auto pick = [&](int n) { return static_cast<int>(random() % static_cast<unsigned>(n)); };
  PlannedOp op;
  op.id = id;
  op.ns = pick(2) == 0 ? "n1" : "n2";
  op.hold_ms = 3 + pick(10);
  if (pick(100) < 15) {  // a semaphore slot, always alone and always 2
    op.slots = 2;
    op.resources = {"pool"};
    return op;
  }
  op.mode = pick(100) < 40 ? "shared" : "exclusive";
  int roll = pick(100);
  int count = roll < 70 ? 1 : roll < 90 ? 2 : 3;
  std::set<std::string> chosen;
  while (static_cast<int>(chosen.size()) < count)
    chosen.insert(k_plain_resources[pick(static_cast<int>(k_plain_resources.size()))]);
  op.resources.assign(chosen.begin(), chosen.end());
  return op;
}

// One shell line: `clock run` of the op around the recorder, noting a failure.
std::string op_line(const PlannedOp& op) {
  std::string line = "\"$T_CLOCK\" --namespace " + op.ns + " run -w 120s";
  line +=
      op.slots > 0 ? " --slots " + std::to_string(op.slots) : (op.mode == "shared" ? " -s" : " -x");
  for (const auto& r : op.resources)
    line += " -r " + r;
  line += " -- \"$T_REC\" \"$T_DIR/log\" " + std::to_string(op.hold_ms) + " " + op.id + " " +
          op.ns + " " + op.mode + " " + std::to_string(op.slots) + " " + joined(op.resources);
  line += " || { echo \"op " + op.id + ": clock run exited $?\" >&2; failed=1; }\n";
  return line;
}

std::uint64_t test_seed() {
  if (const char* text = std::getenv("CLOCK_TEST_SEED"); text && *text)
    return std::stoull(text);
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

}  // namespace

// ---------------------------------------------------------------- the checker itself

TEST_SUITE("lock model") {
  TEST_CASE("the model checker flags conflicting overlaps, full semaphores and token regressions") {
    auto s = [](std::string ns, std::string mode, int slots, std::vector<std::string> resources,
                long long start, long long end, std::vector<long long> tokens = {}) {
      ModelSection section{"s", ns, mode, slots, resources, start, end, resources, tokens};
      return section;
    };
    auto violations = [](std::vector<ModelSection> sections) {
      return check_model(sections).violations.size();
    };
    // Related and exclusive: an overlap is a violation, back to back is not.
    CHECK(violations({s("n1", "exclusive", 0, {"a"}, 0, 10),
                      s("n1", "exclusive", 0, {"a.b"}, 5, 15)}) == 1);
    CHECK(violations({s("n1", "exclusive", 0, {"a.b"}, 0, 10),
                      s("n1", "exclusive", 0, {"a"}, 10, 15)}) == 1);
    CHECK(violations({s("n1", "exclusive", 0, {"a"}, 0, 10),
                      s("n1", "exclusive", 0, {"a.b"}, 11, 15)}) == 0);
    // Other namespace, both shared, siblings, look-alike names: no conflict.
    CHECK(violations(
              {s("n1", "exclusive", 0, {"a"}, 0, 10), s("n2", "exclusive", 0, {"a"}, 5, 15)}) == 0);
    CHECK(violations({s("n1", "shared", 0, {"a"}, 0, 10), s("n1", "shared", 0, {"a.b"}, 5, 15)}) ==
          0);
    CHECK(violations(
              {s("n1", "shared", 0, {"a"}, 0, 10), s("n1", "exclusive", 0, {"a.b"}, 5, 15)}) == 1);
    CHECK(violations({s("n1", "exclusive", 0, {"a.b"}, 0, 10),
                      s("n1", "exclusive", 0, {"a.c"}, 5, 15)}) == 0);
    CHECK(violations({s("n1", "exclusive", 0, {"foo"}, 0, 10),
                      s("n1", "exclusive", 0, {"foobar"}, 5, 15)}) == 0);
    CHECK(violations({s("n1", "exclusive", 0, {"job_1"}, 0, 10),
                      s("n1", "exclusive", 0, {"jobX1.y"}, 5, 15)}) == 0);
    CHECK(violations({s("n1", "exclusive", 0, {"a-1"}, 0, 10),
                      s("n1", "exclusive", 0, {"a-10"}, 5, 15)}) == 0);
    CHECK(violations({s("n1", "exclusive", 0, {"a-1"}, 0, 10),
                      s("n1", "exclusive", 0, {"a-1.b_2"}, 5, 15)}) == 1);
    // Several resources: one conflicting pair is enough.
    CHECK(violations({s("n1", "shared", 0, {"a", "b"}, 0, 10),
                      s("n1", "exclusive", 0, {"b.x", "c"}, 5, 15)}) == 1);
    // A semaphore: N holders together are fine, N+1 are not, and each holder
    // is exclusive toward a related plain lock, even a shared one.
    CHECK(violations({s("n1", "exclusive", 2, {"pool"}, 0, 10),
                      s("n1", "exclusive", 2, {"pool"}, 5, 15)}) == 0);
    CHECK(violations({s("n1", "exclusive", 2, {"pool"}, 0, 10),
                      s("n1", "exclusive", 2, {"pool"}, 5, 15),
                      s("n1", "exclusive", 2, {"pool"}, 8, 20)}) == 1);
    CHECK(violations({s("n1", "exclusive", 2, {"pool"}, 0, 10),
                      s("n1", "shared", 0, {"pool.x"}, 5, 15)}) == 1);
    CHECK(violations({s("n1", "exclusive", 2, {"pool"}, 0, 10),
                      s("n1", "exclusive", 3, {"pool"}, 20, 30)}) == 1);
    // Fencing tokens of one resource grow with the order of conflicting grants.
    CHECK(violations({s("n1", "exclusive", 0, {"a"}, 0, 10, {5}),
                      s("n1", "exclusive", 0, {"a"}, 20, 30, {3})}) == 1);
    CHECK(violations({s("n1", "exclusive", 0, {"a"}, 0, 10, {5}),
                      s("n1", "exclusive", 0, {"a"}, 20, 30, {6})}) == 0);
    CHECK(violations({s("n1", "shared", 0, {"a"}, 0, 10, {5}),
                      s("n1", "shared", 0, {"a"}, 20, 30, {3})}) == 0);
  }
}

// ---------------------------------------------------------------- random stress

TEST_SUITE("stress") {
  TEST_CASE(
      "twelve processes of random namespaces, related resources, modes and semaphores never "
      "break the model" *
      doctest::timeout(900)) {
    std::uint64_t seed = test_seed();
    MESSAGE("seed " << seed << " (CLOCK_TEST_SEED=" << seed << " replays this plan)");
    INFO("seed " << seed << ": CLOCK_TEST_SEED=" << seed << " replays the plan (not the schedule)");
    TestEnv env;
    std::mt19937_64 random(seed);
    constexpr int k_processes = 12;
    constexpr int k_ops = 50;
    std::map<std::string, PlannedOp> plan;
    std::vector<Command> commands;
    for (int p = 0; p < k_processes; ++p) {
      std::string script = "failed=0\n";
      for (int i = 0; i < k_ops; ++i) {
        PlannedOp op = random_op(random, "p" + std::to_string(p) + "." + std::to_string(i));
        script += op_line(op);
        plan[op.id] = op;
      }
      script += "exit $failed\n";
      commands.push_back(env.shell_command(script, {{"T_REC", recorder_binary()}}));
    }

    auto started = Clock::now();
    std::vector<Result> results = run_all(commands, env.path("output"), 600s);
    double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    for (const auto& result : results)
      CHECK_EXIT(result, 0);

    std::vector<ModelSection> sections;
    std::set<std::string> seen;
    for (const auto& line : read_log(env.path("log"))) {
      ModelSection section = section_of(line);
      INFO("section " << describe_section(section));
      CHECK(plan.count(section.id) == 1);
      CHECK(seen.insert(section.id).second);  // each op ran its child once
      // The child was told what it holds: the requested set, a token each.
      auto requested = section.resources;
      auto granted = section.granted;
      std::sort(requested.begin(), requested.end());
      std::sort(granted.begin(), granted.end());
      CHECK(granted == requested);
      CHECK(section.tokens.size() == section.granted.size());
      sections.push_back(section);
    }
    CHECK(sections.size() == plan.size());

    ModelReport report = check_model(sections);
    std::string peaks;
    for (const auto& [key, peak] : report.semaphore_peak)
      peaks += " " + key + "=" + std::to_string(peak);
    MESSAGE(backend_name() << ": " << sections.size() << " sections in " << seconds << "s; "
                           << report.compatible_overlaps
                           << " related pairs ran together legitimately, " << report.close_handovers
                           << " conflicting ones less than 50 ms apart; semaphore peaks:" << peaks);
    for (std::size_t i = 0; i < report.violations.size() && i < 20; ++i)
      FAIL_CHECK(report.violations[i]);
    CHECK(report.violations.empty());
  }
}

// ---------------------------------------------------------------- fairness, deadlock, names, mixes

namespace {

// A record of the fairness test: "request WHO N" is stamped before a request,
// "section WHO N" is the critical section it was granted.
struct Stamp {
  std::string kind, who;
  long long start = 0, end = 0;
};

std::map<std::string, Stamp> stamps_by_key(const std::vector<LogLine>& lines) {
  std::map<std::string, Stamp> out;
  for (const auto& line : lines) {
    REQUIRE(line.label.size() == 3);
    Stamp stamp{line.label[0], line.label[1], line.start, line.end};
    out[line.label[0] + " " + line.label[1] + " " + line.label[2]] = stamp;
  }
  return out;
}

int count_sections(const fs::path& log) {
  std::string text = read_file(log);
  int count = 0;
  for (std::size_t at = text.find(" section "); at != std::string::npos;
       at = text.find(" section ", at + 1)) {
    ++count;
  }
  return count;
}

// The waiters of status --format json for exactly `resource`, in queue order.
std::vector<nlohmann::json> waiters_of(const nlohmann::json& status, const std::string& resource) {
  std::vector<nlohmann::json> out;
  for (const auto& waiter : status["waiters"]) {
    if (waiter.value("resource", "") == resource)
      out.push_back(waiter);
  }
  return out;
}

// Holds $HOLD with `clock run`; its child marks $ME.holds, waits for
// $OTHER.holds, then asks for $WANT as the same owner (CLOCK_OWNER is inherited).
const char* const k_crossing_script = R"(exec "$T_CLOCK" run -w 60s $HOLD -- sh -c '
  touch "$T_DIR/$ME.holds"
  i=0
  while [ ! -e "$T_DIR/$OTHER.holds" ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i + 1)); done
  "$T_CLOCK" run -w 60s $WANT -- true
'
)";

// After $DELAY seconds, $COUNT shared holds of x of $HOLD_MS each, one after
// the other, until `stop` appears; each request is stamped before it is made.
const char* const k_shared_script = R"(sleep "$DELAY"
n=0
while [ ! -e "$T_DIR/stop" ] && [ "$n" -lt "$COUNT" ]; do
  "$T_REC" "$T_DIR/log" 0 request "$WHO" "$n"
  "$T_CLOCK" run -w 120s -s -r x -- "$T_REC" "$T_DIR/log" "$HOLD_MS" section "$WHO" "$n" || exit 1
  n=$((n + 1))
done
)";

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

}  // namespace

TEST_SUITE("lock model") {
  TEST_CASE(
      "an exclusive waiter is granted before shared requests that came after it, while shared "
      "holders keep coming" *
      doctest::timeout(300)) {
    TestEnv env;
    std::map<std::string, std::string> rec = {{"T_REC", recorder_binary()}};
    fs::path log = env.path("log");
    // Three staggered loops each hold x shared for 600 ms in turn: some shared
    // holder is always there, so only the queue can let an exclusive request in.
    std::vector<std::unique_ptr<Process>> stream;
    for (int k = 0; k < 3; ++k) {
      stream.push_back(
          env.spawn(env.shell_command(k_shared_script, {{"T_REC", recorder_binary()},
                                                        {"WHO", "L" + std::to_string(k)},
                                                        {"DELAY", "0." + std::to_string(2 * k)},
                                                        {"COUNT", "1000000"},
                                                        {"HOLD_MS", "600"}})));
    }
    REQUIRE(await([&] { return count_sections(log) >= 3; }, 60s));
    // And a shared lease of the test's own, released only once the latecomers
    // below are queued: the writer cannot be granted before they have asked,
    // however slowly a loaded machine starts them.
    Acquired pin = env.acquire({"-s", "-r", "x", "--ttl", "5m"});

    long long asked = monotonic_now_ns();
    auto writer = env.spawn(env.shell_command(
        "exec \"$T_CLOCK\" run -w 120s -x -r x -- \"$T_REC\" \"$T_DIR/log\" 50 section X 0", rec));
    REQUIRE(await(
        [&] {
          for (const auto& waiter : waiters_of(env.status(), "x")) {
            if (waiter.value("mode", "") == "exclusive")
              return true;
          }
          return false;
        },
        30s, 10ms));
    long long queued = monotonic_now_ns();

    // Latecomers: shared requests made after the writer was queued.
    std::vector<std::unique_ptr<Process>> latecomers;
    for (int k = 0; k < 3; ++k) {
      latecomers.push_back(
          env.spawn(env.shell_command(k_shared_script, {{"T_REC", recorder_binary()},
                                                        {"WHO", "Z" + std::to_string(k)},
                                                        {"DELAY", "0"},
                                                        {"COUNT", "1"},
                                                        {"HOLD_MS", "20"}})));
    }
    // While the writer waits, the queue lists it ahead of the shared requests
    // that came after it: the latecomers, and the loops' next turns.
    nlohmann::json queue;
    REQUIRE(await(
        [&] {
          queue = waiters_of(env.status(), "x");
          return std::count_if(queue.begin(), queue.end(), [](const nlohmann::json& waiter) {
                   return waiter.value("command", "").find("section Z") != std::string::npos;
                 }) == 3;
        },
        60s, 10ms));
    {
      INFO("waiters: " << queue.dump(2));
      CHECK(queue[0].value("mode", "") == "exclusive");
    }
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", pin.credential}), 0);

    Result written = writer->wait(60s);
    write_file(env.path("stop"), "");
    for (auto& process : latecomers)
      CHECK_EXIT(process->wait(60s), 0);
    for (auto& process : stream)
      CHECK_EXIT(process->wait(60s), 0);
    REQUIRE_EXIT(written, 0);

    auto stamps = stamps_by_key(read_log(log));
    REQUIRE(stamps.count("section X 0") == 1);
    const Stamp& exclusive = stamps["section X 0"];
    double waited = (exclusive.start - queued) / 1e9;
    MESSAGE(backend_name() << ": exclusive asked " << (queued - asked) / 1e6 << " ms before "
                           << "status showed it queued, granted " << waited << " s after");
    CHECK(waited < 10.0);

    // Before the writer came, the shared sections overlapped one another: with
    // no queue, it could never have got in.
    std::vector<std::pair<long long, long long>> before;
    for (const auto& [key, stamp] : stamps) {
      if (stamp.kind == "section" && stamp.who != "X" && stamp.start < asked)
        before.emplace_back(stamp.start, stamp.end);
    }
    std::sort(before.begin(), before.end());
    long long covered_until = before.empty() ? 0 : before.front().second, largest_gap = 0;
    for (const auto& [start, end] : before) {
      largest_gap = std::max(largest_gap, start - covered_until);
      covered_until = std::max(covered_until, end);
    }
    MESSAGE("largest gap between shared sections before the writer asked: "
            << largest_gap / 1e6 << " ms; the last one ended " << (covered_until - asked) / 1e6
            << " ms after it asked");

    int later_requests = 0, while_waiting = 0;
    for (const auto& [key, stamp] : stamps) {
      INFO(key << " " << stamp.start << ".." << stamp.end << "; exclusive " << exclusive.start
               << ".." << exclusive.end << ", queued at " << queued);
      if (stamp.kind == "section" && stamp.who != "X") {
        CHECK((stamp.end < exclusive.start || stamp.start > exclusive.end));  // no overlap
      }
      if (stamp.kind != "request" || stamp.start <= queued)
        continue;
      ++later_requests;
      while_waiting += stamp.start < exclusive.start;
      std::string section_key = "section" + key.substr(std::string("request").size());
      REQUIRE(stamps.count(section_key) == 1);
      CHECK(stamps[section_key].start > exclusive.end);
    }
    MESSAGE(later_requests << " shared requests came after the writer was queued, " << while_waiting
                           << " of them while it waited");
    CHECK(while_waiting >= 1);  // shared requests kept coming while it waited
  }

  TEST_CASE(
      "two clock runs each holding what the other asks for: one is told 76 at once, the other "
      "proceeds") {
    TestEnv env;
    struct Round {
      std::string name;
      std::string hold_1, want_1, hold_2, want_2;
    };
    std::vector<Round> rounds = {
        {"plain", "-r A", "-r B", "-r B", "-r A"},
        {"through an ancestor", "-r h.x", "-r k", "-r k", "-r h"},
        {"shared held, exclusive asked", "-s -r s1", "-r s2", "-r s2", "-x -r s1"},
        {"several resources asked", "-r m1", "-r m2 -r m3", "-r m3", "-r m1"},
    };
    int undetected = 0;
    for (std::size_t n = 0; n < rounds.size(); ++n) {
      const Round& round = rounds[n];
      INFO("round: " << round.name);
      std::string p1 = "p1_" + std::to_string(n), p2 = "p2_" + std::to_string(n);
      auto one = env.spawn(env.shell_command(
          k_crossing_script,
          {{"ME", p1}, {"OTHER", p2}, {"HOLD", round.hold_1}, {"WANT", round.want_1}}));
      auto two = env.spawn(env.shell_command(
          k_crossing_script,
          {{"ME", p2}, {"OTHER", p1}, {"HOLD", round.hold_2}, {"WANT", round.want_2}}));
      REQUIRE(await(
          [&] {
            return fs::exists(env.path(p1 + ".holds")) && fs::exists(env.path(p2 + ".holds"));
          },
          30s, 5ms));
      auto both_hold = Clock::now();
      bool one_ended = await([&] { return !one->running() || !two->running(); }, 15s, 5ms);
      double told_after = std::chrono::duration<double>(Clock::now() - both_hold).count();
      if (!one_ended) {
        // Both queued behind each other: the harness kills them (their leases
        // lapse after the TTL); the next round uses other names.
        std::string queue;
        nlohmann::json status = env.status();
        for (const auto& waiter : status["waiters"]) {
          queue += " " + waiter.value("resource", "?") + " (" + waiter.value("mode", "?") +
                   ", owner " + waiter.value("owner", "?") + ")";
        }
        FAIL_CHECK(
            "neither clock run was told of the deadlock within 15 s: both wait for the "
            "other; waiters:"
            << queue);
        ++undetected;
        continue;
      }
      CHECK(told_after < 10.0);
      MESSAGE(backend_name() << ", " << round.name << ": first exit " << told_after
                             << " s after both held");

      Result first = one->wait(60s);
      Result second = two->wait(60s);
      INFO(first.describe());
      INFO(second.describe());
      CHECK(((first.status == 76 && second.status == 0) ||
             (first.status == 0 && second.status == 76)));
      const Result& victim = first.status == 76 ? first : second;
      CHECK(lowercase(victim.err).find("deadlock") != std::string::npos);
    }
    if (undetected == 0) {
      CHECK(env.status()["holders"].empty());
      CHECK(env.status()["waiters"].empty());
    }
  }

  TEST_CASE("only whole segments relate names with _, - and digits") {
    TestEnv env;
    struct Pair {
      std::string one, other;
      bool conflict;
    };
    std::vector<Pair> pairs = {
        {"job_1", "jobX1.y", false}, {"foo", "foobar", false},       {"a-1", "a-1.b_2", true},
        {"a-1", "a-10", false},      {"x_1.y-2", "x_1.y-2.z", true}, {"x_1", "x_1.y-2.z", true},
        {"x_1.y", "x_1.y-2", false}, {"a-1.b", "a-1.b_2", false},    {"a", "a-1", false},
        {"7", "7.7-7", true},        {"job_1", "job_10", false},     {"job_1", "job_1.x", true},
    };
    for (const auto& pair : pairs) {
      for (bool reversed : {false, true}) {
        const std::string& held = reversed ? pair.other : pair.one;
        const std::string& asked = reversed ? pair.one : pair.other;
        INFO(held << " held exclusively, " << asked << " asked for with -n");
        std::string owner = random_owner();
        env.acquire({"-r", held, "--owner", owner});
        CHECK_EXIT(env.clock({"run", "-n", "-r", asked, "--", "true"}), pair.conflict ? 75 : 0);
        CHECK_EXIT(env.clock({"run", "-n", "-s", "-r", asked, "--", "true"}),
                   pair.conflict ? 75 : 0);
        CHECK_EXIT(env.clock({"release", "-r", held, "--owner", owner}), 0);
      }
    }
  }

  TEST_CASE("several resources at once with mixed modes are granted all together or not at all") {
    TestEnv env;
    std::string reader = random_owner();
    env.acquire({"-s", "-r", "a", "-r", "b", "--owner", reader, "--ttl", "10m"});
    // Shared with shared, on both and below them.
    CHECK_EXIT(env.clock({"run", "-n", "-s", "-r", "a", "-r", "b", "--", "true"}), 0);
    CHECK_EXIT(env.clock({"run", "-n", "-s", "-r", "b.x", "-r", "a.y", "--", "true"}), 0);
    // Anything exclusive on either, or below, is kept out; a semaphore slot too.
    CHECK_EXIT(env.clock({"run", "-n", "-x", "-r", "b", "--", "true"}), 75);
    CHECK_EXIT(env.clock({"run", "-n", "-x", "-r", "b.x", "--", "true"}), 75);
    CHECK_EXIT(env.clock({"run", "-n", "--slots", "2", "-r", "a", "--", "true"}), 75);
    CHECK_EXIT(env.clock({"--namespace", "n2", "run", "-n", "-x", "-r", "b", "--", "true"}), 0);

    // All or nothing: the free one is not taken when the other is refused.
    CHECK_EXIT(env.clock({"acquire", "-n", "-x", "-r", "c", "-r", "b"}), 75);
    CHECK(env.holders_of("c").empty());
    std::string writer = random_owner();
    env.acquire({"-x", "-r", "d", "--owner", writer, "--ttl", "10m"});
    CHECK_EXIT(env.clock({"acquire", "-n", "-s", "-r", "a", "-r", "d"}), 75);
    auto a_holders = env.holders_of("a");
    REQUIRE(a_holders.size() == 1);
    CHECK(a_holders[0]["owner"] == id_of(reader));

    // A shared waiter for {d, e} holds neither while it waits, then both.
    auto waiter = env.spawn(env.clock_command(
        {"acquire", "--format", "json", "-w", "60s", "-s", "-r", "e", "-r", "d"}));
    REQUIRE(await([&] { return !env.status()["waiters"].empty(); }, 30s));
    CHECK(env.holders_of("e").empty());
    CHECK_EXIT(env.clock({"run", "-n", "-s", "-r", "e", "--", "true"}), 0);
    CHECK(waiter->running());
    CHECK_EXIT(env.clock({"release", "-r", "d", "--owner", writer}), 0);
    Result granted = waiter->wait(30s);
    REQUIRE_EXIT(granted, 0);
    Acquired both = parse_acquired(granted.out);
    CHECK(both.tokens.size() == 2);
    for (const std::string resource : {"d", "e"}) {
      auto holders = env.holders_of(resource);
      REQUIRE(holders.size() == 1);
      CHECK(holders[0]["owner"] == both.owner);
      CHECK(holders[0]["mode"] == "shared");
    }
    // Shared {a, b, d, e} now all shared: one more shared request on all of
    // them gets in, an exclusive one on any pair of them does not.
    CHECK_EXIT(
        env.clock({"run", "-n", "-s", "-r", "a", "-r", "b", "-r", "d", "-r", "e", "--", "true"}),
        0);
    CHECK_EXIT(env.clock({"run", "-n", "-x", "-r", "f", "-r", "e", "--", "true"}), 75);
    CHECK(env.holders_of("f").empty());
  }

  TEST_CASE("a waiter whose queue entry lapsed and asks again goes to the back of the queue" *
            doctest::timeout(120)) {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "x"});
    std::string first = random_owner();
    // The first waiter dies without leaving the queue: its entry lapses
    // within one TTL (1 s here) and blocks nobody.
    auto dead = env.spawn(env.clock_command(
        {"acquire", "-r", "x", "--owner", first, "--ttl", "1s", "-w", "60s", "--format", "json"}));
    REQUIRE(await([&] { return waiters_of(env.status(), "x").size() == 1; }, 30s, 10ms));
    dead->signal(SIGKILL);
    dead->wait(10s);
    REQUIRE(await([&] { return waiters_of(env.status(), "x").empty(); }, 30s, 50ms));

    std::string second = random_owner();
    auto later = env.spawn(env.clock_command(
        {"acquire", "-r", "x", "--owner", second, "-w", "60s", "--format", "json"}));
    REQUIRE(await([&] { return waiters_of(env.status(), "x").size() == 1; }, 30s, 10ms));
    // The first owner asks again: a new arrival, behind the second.
    auto again = env.spawn(env.clock_command(
        {"acquire", "-r", "x", "--owner", first, "-w", "60s", "--format", "json"}));
    std::vector<nlohmann::json> queue;
    REQUIRE(await(
        [&] {
          queue = waiters_of(env.status(), "x");
          return queue.size() == 2;
        },
        30s, 10ms));
    INFO("waiters: " << nlohmann::json(queue).dump(2));
    CHECK(queue[0].value("owner", "") == id_of(second));
    CHECK(queue[1].value("owner", "") == id_of(first));

    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", holder.credential}), 0);
    Result granted = later->wait(30s);
    CHECK_EXIT(granted, 0);
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", second}), 0);
    CHECK_EXIT(again->wait(30s), 0);
  }
}
