// man clock, GUARANTEES across a PostgreSQL failover (docs/high-availability.md):
// a primary with a synchronous standby behind a multi-host URL
// (target_session_attrs=read-write), the primary crashed and the standby
// promoted while `clock run` loops contend for one resource. Runs under
// CLOCK_TEST_PG_STANDBY=1 tests/helpers/with-postgres.sh (ctest:
// failover-postgres) and nowhere else: it promotes the standby, so a server
// pair serves one run of it.
#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "fault_tools.hpp"
#include "harness.hpp"
#include "postgres_tools.hpp"
#include "sections.hpp"

using namespace clk::test;

namespace {

constexpr auto k_ttl = 20s;
// Each run waits at most this long: a run that the failover leaves waiting
// for a TTL fails the test by timing out rather than hanging it.
const std::string k_run_args = "--ttl 20s -w 50s -r failover";

// CLOCK_MONOTONIC in nanoseconds, the clock of the section log
// (steady_clock is CLOCK_MONOTONIC on Linux).
long long monotonic_ns_of(Clock::time_point instant) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(instant.time_since_epoch()).count();
}

double seconds_between(long long from_ns, long long to_ns) {
  return static_cast<double>(to_ns - from_ns) / 1e9;
}

// One grant: the sections logged under one token (a holder may log several),
// from the first one's start to the last one's end.
std::vector<Section> holdings(const std::vector<Section>& sections) {
  std::map<long long, Section> by_token;
  for (const auto& section : sections) {
    auto [it, inserted] = by_token.try_emplace(std::stoll(section.token), section);
    if (!inserted) {
      it->second.start = std::min(it->second.start, section.start);
      it->second.end = std::max(it->second.end, section.end);
    }
  }
  std::vector<Section> out;
  for (const auto& [token, holding] : by_token)
    out.push_back(holding);
  std::sort(out.begin(), out.end(),
            [](const Section& a, const Section& b) { return a.start < b.start; });
  return out;
}

std::size_t lines_in(const fs::path& path) {
  if (!fs::exists(path))
    return 0;
  std::string text = read_file(path);
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

TEST_SUITE("failover") {
  TEST_CASE(
      "a failover to a synchronous standby under contention: no overlap, no token reissued, "
      "the holder's job exits 0, runs started during it wait and run, and the next grant comes "
      "within seconds of the promotion, not a TTL later" *
      doctest::timeout(240) * pg::only_with_standby()) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);

    // Six loops of `clock run` on one resource until told to stop; each
    // successful run prints a line.
    const std::string loop =
        "while [ ! -e \"$T_DIR/stop\" ]; do\n"
        "  \"$T_CLOCK\" run " +
        k_run_args +
        " -- \"$T_CS\" \"$T_DIR/counter\" \"$T_DIR/log\" ||\n"
        "    { status=$?; echo \"clock run exited $status\" >&2; exit 1; }\n"
        "  echo ran\n"
        "done\n";
    std::vector<std::unique_ptr<Process>> loops;
    for (int i = 0; i < 6; ++i)
      loops.push_back(env.spawn(env.shell_command(loop)));
    REQUIRE(await([&] { return lines_in(env.path("log")) >= 12; }, 60s, 50ms));

    // The job that holds the lock when the primary dies: a section as it
    // starts and one as it ends, after the crash, before the promotion.
    const std::string section = "\"$T_CS\" \"$T_DIR/counter\" \"$T_DIR/log\"";
    auto holder = env.spawn(
        env.clock_command({"run", "--ttl", "20s", "-w", "50s", "-r", "failover", "--", "sh", "-c",
                           env.holding_script("holder", section + " || exit 2") + section}));
    REQUIRE(env.await_started("holder", 60s));
    const std::size_t sections_before_kill = lines_in(env.path("log"));

    const auto killed = Clock::now();
    REQUIRE_EXIT(pg::pg_ctl(env, {"stop", "-m", "immediate"}), 0);
    env.let_go("holder");
    // Runs that start while there is no primary: they must wait, then run.
    std::vector<std::unique_ptr<Process>> newcomers;
    for (int i = 0; i < 2; ++i) {
      newcomers.push_back(
          env.spawn(env.clock_command({"run", "--ttl", "20s", "-w", "50s", "-r", "failover", "--",
                                       env.critical_section_binary(), env.path("counter").string(),
                                       env.path("log").string()})));
    }
    REQUIRE(await([&] { return lines_in(env.path("log")) == sections_before_kill + 1; }, 30s));
    // The operator's reaction time: the holder's release, the newcomers and
    // the loops' waiters meet a dead primary and a read-only standby.
    std::this_thread::sleep_for(500ms);
    const auto promoting = Clock::now();
    REQUIRE_EXIT(pg::pg_ctl(env, {"promote"}), 0);
    const auto promoted = Clock::now();

    Result held = holder->wait(90s);
    CHECK_EXIT(held, 0);
    for (auto& newcomer : newcomers)
      CHECK_EXIT(newcomer->wait(90s), 0);
    // A dozen grants after the promotion, then the loops finish their run.
    CHECK(await([&] { return lines_in(env.path("log")) >= sections_before_kill + 1 + 2 + 12; }, 90s,
                50ms));
    write_file(env.path("stop"), "");
    std::size_t loop_runs = 0;
    for (auto& loop_process : loops) {
      Result result = loop_process->wait(90s);
      CHECK_EXIT(result, 0);
      loop_runs += static_cast<std::size_t>(std::count(result.out.begin(), result.out.end(), '\n'));
    }

    std::vector<Section> sections = read_sections(env.path("log"));
    // The loops' runs, the newcomers' and the holder's two sections.
    CHECK(sections.size() == loop_runs + 2 + 2);
    CHECK(std::stoll("0" + read_file(env.path("counter"))) ==
          static_cast<long long>(sections.size()));
    std::vector<Section> grants = holdings(sections);
    CHECK(grants.size() == loop_runs + 2 + 1);
    check_sections(grants, true);  // no overlap; tokens strictly increase, none reissued

    // The first grant after the crash (none can come before the promotion).
    auto first_after = std::find_if(grants.begin(), grants.end(), [&](const Section& grant) {
      return grant.start > monotonic_ns_of(killed);
    });
    REQUIRE(first_after != grants.end());
    const long long kill_ns = monotonic_ns_of(killed);
    const double stall = seconds_between(kill_ns, first_after->start);
    const double after_promotion = seconds_between(monotonic_ns_of(promoting), first_after->start);
    const auto after_kill = static_cast<std::size_t>(grants.end() - first_after);
    MESSAGE("failover: the standby was promoted "
            << seconds_between(kill_ns, monotonic_ns_of(promoting))
            << " s after the kill (promotion took "
            << seconds_between(monotonic_ns_of(promoting), monotonic_ns_of(promoted))
            << " s); stall " << stall << " s from the kill to the first grant after the promotion ("
            << after_promotion << " s after the promotion began); " << grants.size() << " grants, "
            << after_kill << " after the kill; tokens " << grants.front().token << ".."
            << grants.back().token << ", strictly increasing, none reissued");
    CHECK(first_after->start > monotonic_ns_of(promoting));
    // Every lease was released, on one server or the other: none was left
    // behind (the holder's release meets the failover) to expire.
    std::vector<std::string> events;
    for (const auto& event : history_of(env, "failover"))
      events.push_back(event.value("event", ""));
    CHECK(std::count(events.begin(), events.end(), "released") == static_cast<long>(grants.size()));
    CHECK(std::count(events.begin(), events.end(), "expired") == 0);
    // "Within seconds, not a TTL later": a lease left behind by a release
    // lost in the failover would hold everyone up until it expired.
    CHECK(after_promotion < std::chrono::duration<double>(k_ttl).count() / 2);
  }
}
