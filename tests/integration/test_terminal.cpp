// What a person sees on a real terminal (a tmux pane, read back with
// capture-pane) against what a script or a log file gets: a waiting clock
// shows one line that updates in place and names the holder, but writes plain
// periodic log lines, with no escape codes, to a file; `clock status` colours
// its STATE column on a terminal only, and never with NO_COLOR.
#include <regex>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "harness.hpp"

using namespace clk::test;

namespace {

// A private tmux server (its own socket in the test directory, no user
// config), killed with everything it runs when the test ends.
class Tmux {
 public:
  explicit Tmux(const TestEnv& env) : m_env(env), m_socket(env.path("tmux.sock").string()) {}
  ~Tmux() { tmux({"kill-server"}); }
  Tmux(const Tmux&) = delete;
  Tmux& operator=(const Tmux&) = delete;

  // A detached session NAME, wide enough that no line wraps, running `script`
  // under sh with the test's environment (plus `extra_env`).
  void start(const std::string& name, const std::string& script,
             const std::map<std::string, std::string>& extra_env = {}) {
    std::vector<std::string> args = {"new-session", "-d", "-s", name, "-x", "400", "-y", "20"};
    for (const auto& [key, value] : m_env.environment(extra_env))
      args.insert(args.end(), {"-e", key + "=" + value});
    args.push_back("exec sh -c '" + script + "'");
    Result started = tmux(args);
    REQUIRE_EXIT(started, 0);
  }

  // The pane's visible text; with `escapes`, its colours as SGR sequences.
  std::string capture(const std::string& name, bool escapes = false) const {
    std::vector<std::string> args = {"capture-pane", "-p", "-t", name};
    if (escapes)
      args.insert(args.begin() + 1, "-e");
    Result captured = tmux(args);
    REQUIRE_EXIT(captured, 0);
    return captured.out;
  }

 private:
  Result tmux(std::vector<std::string> args) const {
    args.insert(args.begin(), {"tmux", "-S", m_socket, "-f", "/dev/null"});
    // TERM for the tmux client itself; the panes get tmux's own TERM.
    return run(m_env.command(args, {{"TERM", "xterm"}}), m_env.path("output"), 30s);
  }

  const TestEnv& m_env;
  std::string m_socket;
};

std::vector<std::string> lines_with(const std::string& text, const std::string& needle) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos)
      end = text.size();
    std::string line = text.substr(start, end - start);
    if (line.find(needle) != std::string::npos)
      out.push_back(line);
    start = end + 1;
  }
  return out;
}

// The time waited that a "clock: … waiting 1m5s: …" line shows, in seconds
// (-1 if none): clock prints whole seconds (truncated) below an hour.
long waited_seconds(const std::string& line) {
  std::smatch match;
  if (!std::regex_search(line, match, std::regex("waiting (?:([0-9]+)m)?(?:([0-9]+)s)?: ")))
    return -1;
  long minutes = match[1].matched ? std::stol(match[1]) : 0;
  long seconds = match[2].matched ? std::stol(match[2]) : 0;
  return minutes * 60 + seconds;
}

}  // namespace

TEST_SUITE("terminal") {
  TEST_CASE(
      "a waiting clock shows one updating line on a terminal; with -v, plain log lines in a "
      "file") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "x", "--ttl", "5m"});

    // The same wait with stderr going to a file, from the start, with -v (by
    // default a wait off a terminal is silent for a minute: test_cron.cpp):
    // its second line comes after the log interval (30s), so it runs
    // alongside the rest.
    auto piped = env.spawn(
        env.shell_command("exec \"$T_CLOCK\" -v acquire -r x 2>\"$T_DIR/piped.err\" >/dev/null",
                          {{"TERM", "xterm"}}));

    Tmux tmux(env);
    tmux.start("wait", "\"$T_CLOCK\" run -r x -- true");
    std::vector<std::string> first, second;
    bool shown = await(
        [&] {
          first = lines_with(tmux.capture("wait"), "clock: waiting");
          return !first.empty();
        },
        30s, 100ms);
    REQUIRE_MESSAGE(shown, "no waiting line in the pane:\n" << tmux.capture("wait"));
    bool updated = await(
        [&] {
          second = lines_with(tmux.capture("wait"), "clock: waiting");
          return second.size() != 1 || waited_seconds(second[0]) > waited_seconds(first[0]);
        },
        30s, 100ms);
    INFO("first:  " << first.at(0));
    INFO("second: " << (second.empty() ? "(none)" : second.front()));
    CHECK(updated);
    // One line, rewritten in place: not a new line per update; the time
    // waited on it grows.
    CHECK(first.size() == 1);
    CHECK(second.size() == 1);
    CHECK(waited_seconds(second.at(0)) > waited_seconds(first.at(0)));
    for (const auto& line : second) {
      CHECK(line.find("x is held by " + host_name()) != std::string::npos);
      CHECK(line.find(holder.owner) != std::string::npos);
      CHECK(line.find("token " + std::to_string(holder.token())) != std::string::npos);
    }

    // The file: plain lines, one per log interval, naming the holder.
    std::vector<std::string> logged;
    bool periodic = await(
        [&] {
          logged = lines_with(read_file(env.path("piped.err")), "waiting");
          return logged.size() >= 2;
        },
        90s, 250ms);
    std::string file = read_file(env.path("piped.err"));
    INFO("piped stderr:\n" << file);
    CHECK(periodic);
    CHECK(file.find('\x1b') == std::string::npos);
    CHECK(file.find('\r') == std::string::npos);
    for (const auto& line : logged) {
      CHECK(line.rfind("clock: info: waiting ", 0) == 0);
      CHECK(line.find("x is held by " + host_name()) != std::string::npos);
    }
    // Periodic, not a line per retry: the log interval is 30s, and the shown
    // times are truncated to whole seconds. (A slow machine only widens it.)
    for (std::size_t i = 1; i < logged.size(); ++i)
      CHECK(waited_seconds(logged[i]) - waited_seconds(logged[i - 1]) >= 29);
    CHECK(piped->running());  // still waiting: the lines came while it waited
  }

  // Off a terminal -n is as quiet as flock -n (test_setup_visibility.cpp);
  // on one, someone is looking: the refusal says who holds the lock.
  TEST_CASE("-n on a busy resource with stderr a terminal prints who holds it, exit 75") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "job", "--ttl", "5m"});
    Tmux tmux(env);
    tmux.start("skip",
               "\"$T_CLOCK\" run -n -r job -- true; echo \"exit $?\" > \"$T_DIR/skip.done\"; "
               "sleep 120");
    REQUIRE(await([&] { return !read_file(env.path("skip.done")).empty(); }, 30s));
    CHECK(read_file(env.path("skip.done")) == "exit 75\n");
    std::string pane = tmux.capture("skip");
    INFO("pane:\n" << pane);
    CHECK(pane.find("not acquired") != std::string::npos);
    CHECK(pane.find(holder.owner) != std::string::npos);
  }

  TEST_CASE("status colours its STATE column on a terminal, never with NO_COLOR or in a pipe") {
    TestEnv env;
    env.acquire({"-r", "x"});
    auto waiter = env.spawn(env.clock_command({"acquire", "-r", "x"}));
    REQUIRE(await([&] { return !env.status()["waiters"].empty(); }, 30s));

    Tmux tmux(env);
    const std::string script = "\"$T_CLOCK\" status; touch \"$T_DIR/$DONE\"; sleep 120";
    tmux.start("colour", script, {{"DONE", "colour.done"}});
    tmux.start("plain", script, {{"DONE", "plain.done"}, {"NO_COLOR", "1"}});
    REQUIRE(await([&] { return fs::exists(env.path("colour.done")); }, 30s));
    REQUIRE(await([&] { return fs::exists(env.path("plain.done")); }, 30s));

    std::string coloured = tmux.capture("colour", true);
    INFO("coloured pane:\n" << coloured);
    // tmux re-encodes what it drew: green for held, yellow for waiting.
    CHECK(std::regex_search(coloured, std::regex("\x1b\\[[0-9;]*32m[^\x1b]*held")));
    CHECK(std::regex_search(coloured, std::regex("\x1b\\[[0-9;]*33m[^\x1b]*waiting #1")));

    std::string plain = tmux.capture("plain", true);
    INFO("NO_COLOR pane:\n" << plain);
    CHECK(plain.find("held") != std::string::npos);
    CHECK_FALSE(std::regex_search(plain, std::regex("\x1b\\[[0-9;]*3[0-7]m")));
    CHECK_FALSE(std::regex_search(plain, std::regex("\x1b\\[[0-9;]*1m")));

    Result piped = env.clock({"status"}, {{"TERM", "xterm"}});
    CHECK_EXIT(piped, 0);
    CHECK(piped.out.find("waiting #1") != std::string::npos);
    CHECK(piped.out.find('\x1b') == std::string::npos);
  }
}
