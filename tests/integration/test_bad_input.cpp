// Bad input (man clock, EXIT STATUS): usage errors exit 64, configuration errors 78, an
// unusable SQLite file 74, an unreachable server 69; each says so in one line
// on stderr, never with a password, and never reaches the database as SQL.
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "harness.hpp"

using namespace clk::test;

TEST_SUITE("bad input") {
  TEST_CASE("a bad resource name exits 64 with one line on stderr") {
    TestEnv env;
    for (std::string name :
         {std::string("a..b"), std::string("x'; drop table leases; --"), std::string(""),
          std::string("a b"), std::string("a.*"), std::string(256, 'a'),
          std::string("s.s.s.s.s.s.s.s.s.s.s.s.s.s.s.s.s")}) {
      CAPTURE(name);
      Result acquired = env.clock({"acquire", "-r", name});
      CHECK_EXIT(acquired, 64);
      CHECK(acquired.err_lines().size() == 1);
      CHECK_EXIT(env.clock({"run", "-r", name, "--", "true"}), 64);
      CHECK_EXIT(env.clock({"release", "-r", name, "--owner", random_uuid()}), 64);
    }
    CHECK_EXIT(env.clock({"status", "a..b"}), 64);
    // Nothing reached the database: it still works.
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x"}), 0);
  }

  TEST_CASE("a rejected name is echoed as typed: UTF-8 kept, control bytes escaped") {
    TestEnv env;
    Result umlaut = env.clock({"acquire", "-r", "\xc3\xbcmlaut"});  // ümlaut
    CHECK_EXIT(umlaut, 64);
    INFO(umlaut.err);
    CHECK(umlaut.err.find("'\xc3\xbcmlaut'") != std::string::npos);
    Result escape = env.clock({"acquire", "-r", "a\x1b[2Jb"});
    CHECK_EXIT(escape, 64);
    CHECK(escape.err.find("'a\\x1b[2Jb'") != std::string::npos);
    CHECK(escape.err.find('\x1b') == std::string::npos);
  }

  TEST_CASE("a compound duration (1h30m) is taken wherever a duration is") {
    TestEnv env;
    Result acquired = env.clock({"acquire", "-r", "x", "--ttl", "1h30m"});
    CHECK_EXIT(acquired, 0);
    auto holders = env.holders_of("x");
    REQUIRE(holders.size() == 1);
    // 90 minutes less the moments since: more than 89.
    CHECK(holders[0]["expires_in_ms"].get<long long>() > 89LL * 60'000);
    CHECK_EXIT(env.clock({"run", "-n", "-r", "y", "--max-runtime", "2m30s", "--", "true"}), 0);
    Result bad = env.clock({"acquire", "-r", "z", "--ttl", "30m1h"});
    CHECK_EXIT(bad, 64);
    CHECK(bad.err.find("1h30m") != std::string::npos);
  }

  TEST_CASE("a bad duration exits 64") {
    TestEnv env;
    for (std::vector<std::string> args :
         {std::vector<std::string>{"acquire", "-r", "x", "--ttl", "5x"},
          {"acquire", "-r", "x", "-w", "soon"},
          {"acquire", "-r", "x", "--ttl=-1"},
          {"run", "-r", "x", "--heartbeat", "5x", "--", "true"},
          {"run", "-r", "x", "--kill-after", "1y", "--", "true"}}) {
      CAPTURE(args.back());
      Result result = env.clock(args);
      CHECK_EXIT(result, 64);
      CHECK(result.err_lines().size() == 1);
    }
    CHECK(env.holders_of("x").empty());
  }

  TEST_CASE("a bad owner id exits 64") {
    TestEnv env;
    CHECK_EXIT(env.clock({"acquire", "-r", "x", "--owner", "not-a-uuid"}), 64);
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", "not-a-uuid"}), 64);
    CHECK_EXIT(env.clock({"acquire", "-r", "x"}, {{"CLOCK_OWNER", "bogus"}}), 64);
    Result result =
        env.clock({"renew", "-r", "x", "--owner", "12345678-1234-1234-1234-12345678901z"});
    CHECK_EXIT(result, 64);
    CHECK(result.err_lines().size() == 1);
  }

  TEST_CASE("an unknown flag or command exits 64, not CLI11's own code") {
    TestEnv env;
    CHECK_EXIT(env.clock({"acquire", "-r", "x", "--no-such-flag"}), 64);
    CHECK_EXIT(env.clock({"no-such-command"}), 64);
    CHECK_EXIT(env.clock({"acquire"}), 64);         // no resource
    CHECK_EXIT(env.clock({"run", "-r", "x"}), 64);  // no command
    CHECK_EXIT(env.clock({"acquire", "-r", "x", "-n", "-w", "1s"}),
               64);  // -n and -w exclude each other
  }

  // main builds only the subcommand the command line names (start-up cost):
  // what it names, and what it does not, must parse as before.
  TEST_CASE("the subcommand is found past global options, and '--' belongs to run only") {
    TestEnv env;
    Result extra = env.clock({"status", "--", "true"});
    CHECK_EXIT(extra, 64);
    CHECK(extra.err_lines().size() == 1);
    CHECK_EXIT(env.clock({"--namespace", "run", "status"}), 1);  // "run" is the namespace
    CHECK_EXIT(env.clock({"--namespace=run", "-q", "run", "-r", "x", "--", "true"}), 0);
    CHECK_EXIT(env.clock({"-v", "--log-format", "json", "run", "-r", "x", "--", "true"}), 0);
    Result help = env.clock({"--help"});
    CHECK_EXIT(help, 0);
    for (const char* name : {"acquire", "release", "renew", "status", "history", "run", "gc"})
      CHECK(help.out.find(std::string("\n  ") + name + " ") != std::string::npos);
    CHECK_EXIT(env.clock({"--namespace", "x", "no-such-command"}), 64);
  }

  TEST_CASE("an unreadable or invalid config file exits 78 with one line naming it") {
    TestEnv env;
    write_file(env.path("invalid.toml"), "this is not toml\n");
    write_file(env.path("unknown-key.toml"), "colour = \"blue\"\n");
    write_file(env.path("bad-value.toml"), "[lock]\nttl = \"5x\"\n");
    fs::create_directories(env.path("directory.toml"));
    for (std::string name :
         {"missing.toml", "invalid.toml", "unknown-key.toml", "bad-value.toml", "directory.toml"}) {
      CAPTURE(name);
      std::string file = env.path(name).string();
      Result result = env.clock({"--config", file, "acquire", "-r", "x"});
      CHECK_EXIT(result, 78);
      REQUIRE(result.err_lines().size() == 1);
      CHECK(result.err_lines()[0].find(name) != std::string::npos);
      CHECK_EXIT(env.clock({"status"}, {{"CLOCK_CONFIG", file}}), 78);
    }
    CHECK(env.holders_of("x").empty());
  }

  TEST_CASE("a config file in XDG_CONFIG_HOME is read, and a broken one exits 78") {
    TestEnv env;
    fs::create_directories(env.path("xdg-config/clock"));
    write_file(env.path("xdg-config/clock/clock.toml"), "namespace = \"from-config\"\n");
    REQUIRE_EXIT(env.clock({"acquire", "-r", "x"}), 0);
    auto holders = env.holders_of("x");
    REQUIRE(holders.size() == 1);
    CHECK(holders[0]["namespace"] == "from-config");

    write_file(env.path("xdg-config/clock/clock.toml"), "namespace = \n");
    CHECK_EXIT(env.clock({"status"}), 78);
  }

  TEST_CASE("a bad database URL exits 78") {
    TestEnv env;
    // The mysql:// one is refused for its option before the module is loaded.
    for (std::string url : {"mysql://localhost/clock?no-such-option=1", "not a url", "sqlite:"}) {
      CAPTURE(url);
      Result result = env.clock({"--database", url, "acquire", "-r", "x"});
      CHECK_EXIT(result, 78);
      CHECK(result.err_lines().size() == 1);
    }
    // A port out of range is named; the URL's password is not.
    Result port = env.clock({"--database", "mysql://u:s3cretpw@h:99999/d", "init"});
    CHECK_EXIT(port, 78);
    INFO(port.err);
    CHECK(port.err.find("port '99999'") != std::string::npos);
    CHECK(port.err.find("s3cretpw") == std::string::npos);
    // The hint lists every scheme clock reads.
    Result unknown = env.clock({"--database", "oracle://db/clock", "acquire", "-r", "x"});
    CHECK_EXIT(unknown, 78);
    INFO(unknown.err);
    for (const char* scheme :
         {"sqlite:", "postgresql://", "postgres://", "mysql://", "mariadb://", "host="}) {
      CAPTURE(scheme);
      CHECK(unknown.err.find(scheme) != std::string::npos);
    }
  }

  TEST_CASE("a SQLite file that is not a database exits 74") {
    TestEnv env;
    write_file(env.path("garbage.db"), std::string(4096, 'x'));
    Result result = env.clock(
        {"--database", "sqlite:" + env.path("garbage.db").string(), "acquire", "-r", "x"});
    CHECK_EXIT(result, 74);
    CHECK(result.err_lines().size() == 1);
  }

  TEST_CASE("an unreachable PostgreSQL server exits 69 and never prints the password") {
    TestEnv env;
    // Port 1 on the loopback address: refused at once, no server involved.
    // The last URL leaves the connect timeout at its default (5 s). Each
    // spends -n's patience for server trouble, so they run at once.
    const std::vector<std::pair<std::string, std::string>> urls = {
        {"host=127.0.0.1 port=1 user=clock password=s3cr3t-pw dbname=clock connect_timeout=2",
         "s3cr3t-pw"},
        {"postgresql://clock:s3cr3t-pw@127.0.0.1:1/clock?connect_timeout=2", "s3cr3t-pw"},
        {"postgresql://clock:secret@127.0.0.1:1/x", "secret"}};
    std::vector<Command> commands;
    for (const auto& url : urls)
      commands.push_back(env.clock_command({"--database", url.first, "acquire", "-n", "-r", "x"}));
    std::vector<Result> results = run_all(commands, env.path("output"), 120s);
    for (std::size_t i = 0; i < urls.size(); ++i) {
      const auto& [url, password] = urls[i];
      const Result& result = results[i];
      CAPTURE(url);
      CHECK_EXIT(result, 69);
      CHECK(result.seconds < 10);
      REQUIRE(result.err_lines().size() == 1);
      CHECK(result.err_lines()[0].find("127.0.0.1:1") != std::string::npos);  // host and port
      CHECK(result.err.find(password) == std::string::npos);
      CHECK(result.out.find(password) == std::string::npos);
    }
  }
}
