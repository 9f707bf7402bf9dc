// A database that cannot be reached is given a bounded patience:
// a run or acquire without -w gives up with 69 once the trouble has lasted
// database_patience (5m by default; --db-patience, "forever"), saying so in
// one line and pinging /fail; and trouble that ends in success prints
// nothing (a MariaDB burst against a full server).
#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "harness.hpp"
#include "mariadb_tools.hpp"
#include "sections.hpp"
#include "server_tools.hpp"

using namespace clk::test;
using nlohmann::json;

namespace {

// Nothing listens on port 1.
std::string unreachable_url() {
  return backend_name() == "postgres" ? "postgresql://clock@127.0.0.1:1/clock?connect_timeout=1"
                                      : "mariadb://clock@127.0.0.1:1/clock";
}

// The ping receiver of tests/helpers/ping_receiver.py, until destroyed.
class Receiver {
 public:
  explicit Receiver(const TestEnv& env) : m_log(env.path("pings.log")) {
    const auto port_file = env.path("receiver.port");
    m_process = env.spawn(
        env.command({"/usr/bin/python3", std::string(CLOCK_TEST_HELPERS_DIR) + "/ping_receiver.py",
                     m_log.string(), port_file.string(), "--answer"}));
    REQUIRE_MESSAGE(await([&] { return fs::exists(port_file); }, 20s),
                    "the ping receiver did not start");
    std::string port = read_file(port_file);
    m_url = "http://127.0.0.1:" + port.substr(0, port.find('\n')) + "/ping/patience";
  }
  const std::string& url() const { return m_url; }
  std::vector<json> pings() const {
    std::vector<json> out;
    std::ifstream in(m_log);
    for (std::string line; std::getline(in, line);)
      if (!line.empty())
        out.push_back(json::parse(line));
    return out;
  }

 private:
  fs::path m_log;
  std::unique_ptr<Process> m_process;
  std::string m_url;
};

const std::string k_no_server = "no server to be unreachable: SQLite opens a file";

}  // namespace

TEST_SUITE("database patience") {
  TEST_CASE("no server at the URL, no -w, database_patience = 3s: 69 within it, one line, /fail" *
            not_on("sqlite", k_no_server)) {
    TestEnv env;
    Receiver receiver(env);
    const fs::path config = env.path("clock.toml");
    write_file(config, "database_patience = \"3s\"\n");
    Result result = env.clock(
        {"--config", config.string(), "run", "-r", "job", "--ping", receiver.url(), "--", "true"},
        {{"CLOCK_DATABASE_URL", unreachable_url()}}, 60s);
    INFO(result.describe());
    CHECK_FALSE(result.timed_out);
    CHECK_EXIT(result, 69);
    REQUIRE(result.err_lines().size() == 1);
    CHECK(result.err.find("database_patience is 3s") != std::string::npos);
    auto pings = receiver.pings();
    REQUIRE(pings.size() == 1);
    std::string path = pings[0]["path"];
    CHECK(path.ends_with("/fail"));
  }

  TEST_CASE("--db-patience on acquire wins over the file; the default is 5m, 'forever' allowed" *
            not_on("sqlite", k_no_server)) {
    TestEnv env;
    const fs::path config = env.path("clock.toml");
    write_file(config, "database_patience = \"forever\"\n");
    Result result =
        env.clock({"--config", config.string(), "acquire", "-r", "job", "--db-patience", "2s"},
                  {{"CLOCK_DATABASE_URL", unreachable_url()}}, 60s);
    INFO(result.describe());
    CHECK_FALSE(result.timed_out);
    CHECK_EXIT(result, 69);
    CHECK(result.err_lines().size() == 1);
    CHECK(result.err.find("database_patience is 2s") != std::string::npos);

    auto setting = [&](const std::vector<std::string>& args) {
      Result shown = env.clock(args);
      REQUIRE_EXIT(shown, 0);
      for (const auto& entry : json::parse(shown.out))
        if (entry["key"] == "database_patience")
          return entry;
      FAIL("clock config lists no database_patience");
      return json();
    };
    auto by_default = setting({"config", "--format", "json"});
    CHECK(by_default["value"] == "5m");
    CHECK(by_default["origin"] == "default");
    CHECK(setting({"--config", config.string(), "config", "--format", "json"})["value"] ==
          "forever");
    CHECK_EXIT(env.clock({"acquire", "-r", "job", "--db-patience", "soon"}), 64);
  }
}

TEST_SUITE("stress") {
  // MariaDB's only: PostgreSQL's max_connections takes a restart. In the
  // stress suite, whose ctest entry runs alone: the limit is the server's.
  TEST_CASE(
      "a burst of 100 runs and 20 waiters on one resource, by an app login, against MariaDB "
      "with max_connections = 20: every run 0, stderr silent, the 20 one at a time in token "
      "order" *
      only_on("mariadb")) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"run", "-r", "burst.job0", "--", "true"}), 0);  // the schema
    server::AppLogin app(env, 0, "clock_app");
    Result before = maria::sql(env, "SELECT @@global.max_connections");
    REQUIRE_EXIT(before, 0);
    const std::string restore = "SET GLOBAL max_connections = " + before.out;
    REQUIRE_EXIT(maria::sql(env, "SET GLOBAL max_connections = 20"), 0);
    struct Restore {
      const TestEnv& env;
      std::string statement;
      ~Restore() { maria::sql(env, statement); }
    } restore_after{env, restore};

    const std::string go = env.path("go").string();
    std::vector<std::unique_ptr<Process>> runs;
    // Each waits for the go file, so the hundred and twenty start at one instant.
    auto start = [&](const std::string& run) {
      auto variables = app.env();
      variables["GO"] = go;
      runs.push_back(env.spawn(env.shell_command(
          "while [ ! -e \"$GO\" ]; do sleep 0.01; done\nexec \"$T_CLOCK\" run " + run, variables)));
    };
    for (int n = 1; n <= 100; ++n)
      start("-r burst.job" + std::to_string(n) + " -- sh -c 'echo " + std::to_string(n) +
            " >> \"$T_DIR/each\"'");
    for (int n = 1; n <= 20; ++n)
      start("-r burst.one -w 120s -- \"$T_CS\" \"$T_DIR/counter\" \"$T_DIR/log\"");
    write_file(go, "");
    int failed = 0, retry_lines = 0;
    std::string other_lines;  // a renewal at risk still says so (a line per failed attempt)
    for (auto& run : runs) {
      Result result = run->wait(600s);
      INFO(result.describe());
      CHECK_EXIT(result, 0);
      failed += result.status != 0;
      for (const auto& line : result.err_lines()) {
        if (line.find("still trying") != std::string::npos ||
            line.find("(error 1040)") != std::string::npos ||
            line.find("(error 1213)") != std::string::npos ||
            line.find("(error 1205)") != std::string::npos) {
          CHECK(line.empty());  // shows the line
          ++retry_lines;
        } else {
          other_lines += line + "\n";
        }
      }
    }
    CHECK(failed == 0);
    CHECK(retry_lines == 0);
    std::vector<Section> sections = read_sections(env.path("log"));
    CHECK(sections.size() == 20);
    check_sections(sections, true);
    std::istringstream each(read_file(env.path("each")));
    std::vector<std::string> ran;
    for (std::string line; std::getline(each, line);)
      ran.push_back(line);
    std::sort(ran.begin(), ran.end());
    CHECK(ran.size() == 100);  // each once
    CHECK(std::unique(ran.begin(), ran.end()) == ran.end());
    if (!other_lines.empty())
      MESSAGE("other stderr lines of the burst:\n" << other_lines);
    // The burst did meet a full server (else it tested nothing).
    Result refused = maria::sql(env, "SHOW GLOBAL STATUS LIKE 'Connection_errors_max_connections'");
    REQUIRE_EXIT(refused, 0);
    MESSAGE("connections refused as too many: " << refused.out);
  }
}
