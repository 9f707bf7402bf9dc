// clock run --ping (man clock, COMMANDS): the host that runs the job pings
// /start and /<exit status> (with the tail of its stderr), the hosts that
// skip because another ran send nothing, a host that cannot reach the
// database pings /fail; a ping never changes the exit status and never adds
// more than the documented bound (2 pings x notify::k_ping_timeout). A real
// HTTP receiver (tests/helpers/ping_receiver.py) on 127.0.0.1.
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>

#include <doctest/doctest.h>

#include "harness.hpp"

using namespace clk::test;
using nlohmann::json;

namespace {

// The receiver, running until destroyed.
class PingReceiver {
 public:
  explicit PingReceiver(const TestEnv& env, bool hang = false) : m_log(env.path("pings.log")) {
    const auto port_file = env.path(hang ? "hang.port" : "receiver.port");
    m_process = env.spawn(
        env.command({"/usr/bin/python3", std::string(CLOCK_TEST_HELPERS_DIR) + "/ping_receiver.py",
                     m_log.string(), port_file.string(), hang ? "--hang" : "--answer"}));
    bool up = await([&] { return fs::exists(port_file); }, 20s);
    REQUIRE_MESSAGE(up, "the ping receiver did not start");
    m_url = "http://127.0.0.1:" + read_file(port_file).substr(0, read_file(port_file).find('\n')) +
            "/ping/0b5d6e1c-secret-uuid";
  }
  const std::string& url() const { return m_url; }
  // Every request so far, in arrival order.
  std::vector<json> pings() const {
    std::vector<json> out;
    std::ifstream in(m_log);
    for (std::string line; std::getline(in, line);)
      if (!line.empty())
        out.push_back(json::parse(line));
    return out;
  }
  void stop() { m_process.reset(); }

 private:
  fs::path m_log;
  std::unique_ptr<Process> m_process;
  std::string m_url;
};

// "/ping/<uuid>/start" → "start".
std::string kind_of(const json& ping) {
  std::string path = ping["path"];
  return path.substr(path.rfind('/') + 1);
}

std::string rid_of(const json& ping) {
  std::string query = ping["query"];
  auto at = query.find("rid=");
  return at == std::string::npos ? "" : query.substr(at + 4, 36);
}

json ping_history(const TestEnv& env, const std::string& resource, const std::string& event) {
  Result history =
      env.clock({"history", resource, "--event", event, "--limit", "10000", "--format", "json"});
  REQUIRE_EXIT(history, 0);
  return json::parse(history.out)["events"];
}

}  // namespace

TEST_SUITE("pings") {
  TEST_CASE(
      "three hosts looping on a --once-per job with --ping: exactly the host that ran pings, "
      "one /start and one /0 per run, and the hosts that skipped send nothing") {
    TestEnv env;
    PingReceiver receiver(env);
    const std::string loop =
        "while [ ! -e \"$T_DIR/stop\" ]; do\n"
        "  \"$T_CLOCK\" run -r rep --once-per 1500ms --ping \"$URL\" -- sh -c 'sleep 0.2'\n"
        "  echo $? >> \"$T_DIR/status.$N\"\n"
        "  sleep 0.05\n"
        "done\n";
    std::vector<std::unique_ptr<Process>> loops;
    for (int n = 0; n < 3; ++n) {
      loops.push_back(
          env.spawn(env.shell_command(loop, {{"URL", receiver.url()}, {"N", std::to_string(n)}})));
    }
    std::this_thread::sleep_for(6s);
    write_file(env.path("stop"), "");
    for (auto& loop_process : loops)
      CHECK_EXIT(loop_process->wait(60s), 0);
    for (int n = 0; n < 3; ++n)
      CHECK(read_file(env.path("status." + std::to_string(n))).find_first_not_of("0\n") ==
            std::string::npos);

    auto acquired = ping_history(env, "rep", "acquired");
    auto skipped = ping_history(env, "rep", "skipped");
    std::set<std::string> ran;  // owners that ran (each run is a new owner)
    for (const auto& event : acquired)
      ran.insert(event["owner"].get<std::string>());
    REQUIRE(ran.size() >= 3);            // 6 s of a 1.5 s period
    CHECK(skipped.size() > ran.size());  // the others skipped

    std::map<std::string, std::vector<std::string>> by_run;
    for (const auto& ping : receiver.pings()) {
      CHECK(ping["method"] == "POST");
      by_run[rid_of(ping)].push_back(kind_of(ping));
    }
    INFO("pings: " << json(receiver.pings()).dump());
    std::set<std::string> pinged;
    for (const auto& [rid, kinds] : by_run) {
      pinged.insert(rid);
      CHECK(kinds == std::vector<std::string>{"start", "0"});
    }
    CHECK(pinged == ran);
  }

  TEST_CASE("a job exiting 3 pings /3 with the tail of its stderr, which still reaches stderr") {
    TestEnv env;
    PingReceiver receiver(env);
    Result result = env.clock({"run", "-r", "job", "--ping", receiver.url(), "--", "sh", "-c",
                               "echo to-stdout; echo first-line >&2; echo the-last-words >&2; "
                               "exit 3"});
    CHECK_EXIT(result, 3);
    CHECK(result.out == "to-stdout\n");
    CHECK(result.err.find("the-last-words") != std::string::npos);
    auto pings = receiver.pings();
    REQUIRE(pings.size() == 2);
    CHECK(kind_of(pings[0]) == "start");
    CHECK(kind_of(pings[1]) == "3");
    CHECK(pings[1]["body"] == "first-line\nthe-last-words\n");
    CHECK(rid_of(pings[0]) == rid_of(pings[1]));
  }

  TEST_CASE(
      "a host that cannot reach the database pings /fail saying so and exits as clock does "
      "without a ping") {
    TestEnv env;
    PingReceiver receiver(env);
    // Nothing listens on port 1; SQLite cannot make a file below /proc.
    const std::map<std::string, std::string> urls = {
        {"sqlite", "sqlite:/proc/clock-test/clock.db"},
        {"postgres", "postgresql://clock@127.0.0.1:1/clock?connect_timeout=1"},
        {"mariadb", "mariadb://clock@127.0.0.1:1/clock"}};
    const bool server = backend_name() != "sqlite";
    Result result = env.clock({"run", "-n", "-r", "job", "--ping", receiver.url(), "--", "true"},
                              {{"CLOCK_DATABASE_URL", urls.at(backend_name())}});
    CHECK_EXIT(result, server ? 69 : 74);
    auto pings = receiver.pings();
    REQUIRE(pings.size() == 1);
    CHECK(kind_of(pings[0]) == "fail");
    CHECK(pings[0]["body"].get<std::string>().starts_with("clock: database unreachable: "));
  }

  TEST_CASE(
      "a receiver that is gone or never answers leaves the exit status alone and adds at most "
      "two ping timeouts") {
    TestEnv env;
    {
      PingReceiver gone(env);
      const std::string url = gone.url();
      gone.stop();
      Result result = env.clock({"run", "-r", "job", "--ping", url, "--", "sh", "-c", "exit 5"});
      CHECK_EXIT(result, 5);
      CHECK(result.seconds < 3.0);
      CHECK(result.err.find("ping http://127.0.0.1:") != std::string::npos);
      CHECK(result.err.find("secret-uuid") == std::string::npos);  // masked
    }
    PingReceiver hanging(env, true);
    Result result =
        env.clock({"run", "-r", "job", "--ping", hanging.url(), "--", "sh", "-c", "exit 0"});
    CHECK_EXIT(result, 0);
    // Two pings of at most 2 s each, and the run itself.
    CHECK(result.seconds >= 3.9);
    CHECK(result.seconds < 6.0);
    CHECK(hanging.pings().size() == 2);
  }

  TEST_CASE("a host that skips sends nothing, or /log with ping.on_skip = \"log\"") {
    TestEnv env;
    PingReceiver receiver(env);
    REQUIRE_EXIT(env.clock({"run", "-r", "nightly", "--once-per", "1h", "--ping", receiver.url(),
                            "--", "true"}),
                 0);
    REQUIRE(receiver.pings().size() == 2);
    REQUIRE_EXIT(env.clock({"run", "-r", "nightly", "--once-per", "1h", "--ping", receiver.url(),
                            "--", "true"}),
                 0);
    CHECK(receiver.pings().size() == 2);
    write_file(env.path("clock.toml"), "[ping]\non_skip = \"log\"\n[ping.urls]\n\"nightly\" = \"" +
                                           receiver.url() + "\"\n");
    Result logged = env.clock({"--config", env.path("clock.toml").string(), "run", "-r", "nightly",
                               "--once-per", "1h", "--", "true"});
    CHECK_EXIT(logged, 0);
    auto pings = receiver.pings();
    REQUIRE(pings.size() == 3);
    CHECK(kind_of(pings[2]) == "log");
    CHECK(pings[2]["body"].get<std::string>().find("skipped") != std::string::npos);
  }

  TEST_CASE("the config file's ping.urls names a resource's URL; a bad URL is a usage error") {
    TestEnv env;
    PingReceiver receiver(env);
    write_file(env.path("clock.toml"), "[ping.urls]\n\"db.backup\" = \"" + receiver.url() + "\"\n");
    Result result = env.clock(
        {"--config", env.path("clock.toml").string(), "run", "-r", "db.backup", "--", "true"});
    CHECK_EXIT(result, 0);
    CHECK(receiver.pings().size() == 2);

    Result bad = env.clock({"run", "-r", "x", "--ping", "ftp://example.com/x", "--", "true"});
    CHECK_EXIT(bad, 64);
    CHECK(bad.err_lines().size() == 1);
    CHECK(bad.err.find("--ping") != std::string::npos);
    write_file(env.path("bad.toml"), "[ping.urls]\n\"db\" = \"not a url\"\n");
    Result bad_file =
        env.clock({"--config", env.path("bad.toml").string(), "run", "-r", "db", "--", "true"});
    CHECK_EXIT(bad_file, 78);
    CHECK(bad_file.err_lines().size() == 1);
  }

  TEST_CASE("a ping URL's user:password@ and path: not in ps, nor in a nested run's command") {
    TestEnv env;
    PingReceiver receiver(env);
    std::string url = receiver.url();
    url.insert(std::string("http://").size(), "pinger:pw-sekrit@");
    // An enclosing run whose command is a clock run with --ping.
    auto outer = env.spawn(env.clock_command({"run", "-r", "outer", "--", TestEnv::clock_binary(),
                                              "run", "-r", "inner", "--ping", url, "--", "sh", "-c",
                                              env.holding_script("nested")}));
    REQUIRE(env.await_started("nested"));
    const auto inner = env.holders_of("inner");
    REQUIRE(inner.size() == 1);
    for (pid_t pid : {outer->pid(), inner[0]["pid"].get<pid_t>()}) {
      const std::string cmdline = read_file("/proc/" + std::to_string(pid) + "/cmdline");
      CAPTURE(pid);
      CHECK(cmdline.find("127.0.0.1") != std::string::npos);
      CHECK(cmdline.find("pw-sekrit") == std::string::npos);
      CHECK(cmdline.find("secret-uuid") == std::string::npos);
    }
    const auto outer_holder = env.holders_of("outer");
    REQUIRE(outer_holder.size() == 1);
    const std::string stored = outer_holder[0]["command"];
    CAPTURE(stored);
    CHECK(stored.find("--ping http://****@127.0.0.1:") != std::string::npos);
    CHECK(stored.find("pw-sekrit") == std::string::npos);
    CHECK(stored.find("secret-uuid") == std::string::npos);
    env.let_go("nested");
    CHECK_EXIT(outer->wait(), 0);
    CHECK(receiver.pings().size() == 2);  // the URL still works: /start and /0
  }

  TEST_CASE("the ping URL's secret part is not in ps while the job runs") {
    TestEnv env;
    PingReceiver receiver(env);
    auto job = env.spawn(env.clock_command(
        {"run", "-r", "ps", "--ping", receiver.url(), "--", "sh", "-c", env.holding_script("ps")}));
    REQUIRE(env.await_started("ps"));
    std::string cmdline = read_file("/proc/" + std::to_string(job->pid()) + "/cmdline");
    CHECK(cmdline.find("127.0.0.1") != std::string::npos);
    CHECK(cmdline.find("secret-uuid") == std::string::npos);
    env.let_go("ps");
    CHECK_EXIT(job->wait(), 0);
  }
}
