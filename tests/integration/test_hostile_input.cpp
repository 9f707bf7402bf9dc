// Hostile input: names that look like SQL, hold quotes, wildcards,
// control or non-UTF-8 bytes, or run to 10 KB are refused with exit 64 and
// one line that cannot drive the terminal; the same bytes in a command line
// are data: stored and shown faithfully (JSON) or escaped (tables), never
// executed. Passwords never show: not in messages, logs, status, history, a
// world-readable config file (refused, 78) or /proc/PID/cmdline. Both
// backends; the ps test needs a PostgreSQL URL. (NUL cannot travel in argv or
// the environment: it is tried through the config file.)
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <vector>

#include <doctest/doctest.h>

#include "common_helpers.hpp"
#include "harness.hpp"

using namespace clk::test;
using nlohmann::json;

namespace {

const std::string k_esc = "\x1b[31mred\x07\rX";
const std::string k_non_utf8 = "caf\xe9\xff";
const std::string k_sql = "x'; drop table leases; --";

// Strings that are no resource name, namespace, owner id or duration.
std::vector<std::string> hostile_names() {
  return {k_sql,
          "'",
          "\"",
          "%",
          "a%",
          "a*",
          "a\\b",
          "a b",
          "a\nb",
          k_esc,
          k_non_utf8,
          "caf\xc3\xa9",  // valid UTF-8, but not [A-Za-z0-9_-]
          std::string(10 * 1024, 'a'),
          [] {
            std::string dotted;
            for (int i = 0; i < 2048; ++i)
              dotted += "a.";
            return dotted + "a";
          }()};
}

bool has_control_bytes(const std::string& text) {
  for (unsigned char c : text) {
    if ((c < 0x20 && c != '\n') || c == 0x7f)
      return true;
  }
  return false;
}

// One line on stderr, no control byte in it.
void check_one_clean_line(const Result& result) {
  INFO(result.describe());
  CHECK(result.err_lines().size() == 1);
  CHECK(!has_control_bytes(result.err));
}

}  // namespace

TEST_SUITE("hostile input") {
  TEST_CASE(
      "hostile resource names, namespaces, owner ids and durations exit 64 in one clean line") {
    TestEnv env;
    std::string owner = random_uuid();
    for (const std::string& name : hostile_names()) {
      CAPTURE(json(name).dump(-1, ' ', false, json::error_handler_t::replace));
      for (std::vector<std::string> args : {
               std::vector<std::string>{"acquire", "-n", "-r", name},
               {"run", "-r", name, "--", "true"},
               {"release", "-r", name, "--owner", owner},
               {"renew", "-r", name, "--owner", owner},
               {"status", name},
               {"history", name},
               {"--namespace", name, "acquire", "-n", "-r", "x"},
               {"acquire", "-n", "-r", "x", "--owner", name},
               {"acquire", "-n", "-r", "x", "--ttl", name},
               {"acquire", "-r", "x", "-w", name},
           }) {
        Result result = env.clock(args);
        CHECK_EXIT(result, 64);
        check_one_clean_line(result);
      }
      // From the environment: the owner is a usage error, the namespace a
      // configuration error (man clock, EXIT STATUS).
      CHECK_EXIT(env.clock({"acquire", "-n", "-r", "x"}, {{"CLOCK_OWNER", name}}), 64);
      if (name.find('\n') == std::string::npos) {
        Result from_env = env.clock({"acquire", "-n", "-r", "x"}, {{"CLOCK_NAMESPACE", name}});
        CHECK_EXIT(from_env, 78);
        check_one_clean_line(from_env);
      }
    }
    // Nothing reached the database as SQL: the tables are intact and empty.
    CHECK(env.status()["holders"].empty());
    Acquired after = env.acquire({"-n", "-r", "x"});
    CHECK(env.holders_of("x").size() == 1);
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", after.credential}), 0);
  }

  TEST_CASE("'_' and '-' are literal in names: no wildcard matches another resource") {
    TestEnv env;
    env.acquire({"-r", "a_c"});
    // With LIKE, a_c would match abc and block it; it must not.
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "abc"}), 0);
    CHECK(env.status({"abc"})["holders"].size() == 1);
    CHECK(env.status({"a_c"})["holders"].size() == 1);
    CHECK(env.status({"a_"}).value("holders", json::array()).empty());
  }

  TEST_CASE("NUL and control bytes in the config file's strings exit 78 in one clean line") {
    TestEnv env;
    for (std::string value : {R"(a\u0000b)", R"(a\u001b[31mb)", R"(x'; drop table leases; --)"}) {
      CAPTURE(value);
      write_file(env.path("ns.toml"), "namespace = \"" + value + "\"\n");
      Result result = env.clock({"--config", env.path("ns.toml").string(), "acquire", "-r", "x"},
                                {{"CLOCK_DATABASE_URL", k_unset}});
      CHECK_EXIT(result, 78);
      check_one_clean_line(result);
      CHECK(result.err.find("ns.toml") != std::string::npos);  // not cut short at the NUL
    }
    // A NUL in the SQLite path would cut it short (another file): refused.
    write_file(env.path("db.toml"),
               "database = \"sqlite:" + env.path("a").string() + R"(\u0000b.db")" + "\n");
    // (CLOCK_DATABASE_URL would beat the file's database.)
    Result result = env.clock({"--config", env.path("db.toml").string(), "acquire", "-r", "x"},
                              {{"CLOCK_DATABASE_URL", k_unset}});
    CHECK_EXIT(result, 78);
    check_one_clean_line(result);
    CHECK(!fs::exists(env.path("a")));
    CHECK(env.status()["holders"].empty());
  }

  TEST_CASE(
      "a command line with SQL, escape sequences, non-UTF-8 and 10 KB is stored, not run, cut "
      "to its 4096 bytes") {
    TestEnv env;
    const std::string big(10 * 1024, 'k');
    auto holder = env.spawn(
        env.clock_command({"run", "-r", "job", "--", "sh", "-c", env.holding_script("job"), "sh",
                           k_sql, k_esc, k_non_utf8, "%_", big}));
    REQUIRE(env.await_started("job"));

    // JSON: exactly the bytes (the ESC, BEL and CR as \u escapes in the
    // document); the non-UTF-8 argument in bash's $'…' form with \xNN.
    auto holders = env.holders_of("job");
    REQUIRE(holders.size() == 1);
    std::string command = holders[0].value("command", "");
    CHECK(command.find("'x'\\''; drop table leases; --'") != std::string::npos);
    CHECK(command.find(k_esc) != std::string::npos);
    CHECK(command.find("$'caf\\xe9\\xff'") != std::string::npos);
    CHECK(command.find(" %_ ") != std::string::npos);  // plain to a shell: unquoted
    // Cut to 4096 bytes (docs/threat-model.md, "Bounds of a call"), ending in "…".
    CHECK(command.size() <= 4096);
    CHECK(command.ends_with("\u2026"));
    CHECK(command.find(big.substr(0, 3000)) != std::string::npos);

    // Tables: escaped, so the terminal shows the bytes instead of obeying them.
    Result table = env.clock({"status"});
    CHECK_EXIT(table, 0);
    CHECK(!has_control_bytes(table.out));
    CHECK(table.out.find("\\x1b[31mred\\x07\\x0dX") != std::string::npos);
    CHECK(table.out.find("drop table leases") != std::string::npos);

    env.let_go("job");
    CHECK_EXIT(holder->wait(), 0);
    Result history = env.clock({"history", "job"});
    CHECK_EXIT(history, 0);
    CHECK(!has_control_bytes(history.out));
    CHECK(history.out.find("\\x1b[31mred\\x07\\x0dX") != std::string::npos);
    Result history_json = env.clock({"history", "job", "--format", "json"});
    CHECK_EXIT(history_json, 0);
    json events = json::parse(history_json.out).at("events");
    REQUIRE(!events.empty());
    CHECK(events[0].value("command", "").find(k_esc) != std::string::npos);

    // Never executed: the tables are still there and work.
    Acquired next = env.acquire({"-n", "-r", "job"});
    CHECK(next.token() > 0);
    CHECK(env.holders_of("job").size() == 1);
  }

  TEST_CASE("a config file with a password that others can read exits 78 naming it and its mode") {
    TestEnv env;
    // Port 1: nothing listens, so a file that passes the check fails later, at
    // the connection (69), without a server.
    const std::string secret = "hunter2-config";
    const std::string url = "postgresql://clock:" + secret + "@127.0.0.1:1/clock?connect_timeout=2";
    // One file per mode, all tried at once: a file that passes the check
    // costs clock -n's patience for an unreachable server (5 s).
    const std::vector<mode_t> modes = {0644, 0640, 0604, 0660, 0600, 0400};
    std::vector<fs::path> files;
    std::vector<Command> commands;
    for (mode_t mode : modes) {
      char octal[8];
      std::snprintf(octal, sizeof octal, "%04o", static_cast<unsigned>(mode));
      fs::path file = env.path(std::string("clock-") + octal + ".toml");
      write_file(file, "database = \"" + url + "\"\n");
      REQUIRE(chmod(file.c_str(), mode) == 0);
      files.push_back(file);
      // (CLOCK_DATABASE_URL would beat the file's database.)
      commands.push_back(env.clock_command({"--config", file.string(), "acquire", "-n", "-r", "x"},
                                           {{"CLOCK_DATABASE_URL", k_unset}}));
      commands.push_back(
          env.clock_command({"acquire", "-n", "-r", "x"},
                            {{"CLOCK_CONFIG", file.string()}, {"CLOCK_DATABASE_URL", k_unset}}));
    }
    std::vector<Result> results = run_all(commands, env.path("output"), 120s);
    for (std::size_t i = 0; i < results.size(); ++i) {
      const mode_t mode = modes[i / 2];
      const fs::path& file = files[i / 2];
      const Result& result = results[i];
      CAPTURE(mode);
      CAPTURE(i % 2);  // 0: --config, 1: CLOCK_CONFIG
      CHECK(result.err.find(secret) == std::string::npos);
      if ((mode & 077) != 0) {
        CHECK_EXIT(result, 78);
        REQUIRE(result.err_lines().size() == 1);
        char octal[8];
        std::snprintf(octal, sizeof octal, "%04o", static_cast<unsigned>(mode));
        CHECK(result.err.find(file.string()) != std::string::npos);
        CHECK(result.err.find(std::string("mode ") + octal) != std::string::npos);
        CHECK(result.err.find("chmod 600") != std::string::npos);
      } else {
        CHECK_EXIT(result, 69);
      }
    }
    // Without a password the file may be world-readable.
    fs::path file = env.path("clock.toml");
    write_file(file, "namespace = \"shared\"\n");
    REQUIRE(chmod(file.c_str(), 0644) == 0);
    CHECK_EXIT(env.clock({"--config", file.string(), "acquire", "-n", "-r", "x"}), 0);
  }

  TEST_CASE("a password in a malformed or unreachable database URL is never printed") {
    TestEnv env;
    const std::string secret = "hunter2pw";
    const std::vector<std::string> urls = {
        "host=127.0.0.1 port=1 password=" + secret + " dbname=x connect_timeout=2",
        "host=127.0.0.1 port=1 password='" + secret + " and more' dbname=x",
        "host=127.0.0.1 port=1 password=my " + secret + " dbname=x",  // missing "="
        "host=127.0.0.1 port=1 password='" + secret,                  // unterminated quote
        "postgresql://u:" + secret + "@127.0.0.1:1/x?connect_timeout=2",
        "postgresql://u:" + secret + "@127.0.0.1:1/x?connect_timeout=2&bogus=1",
        "postgresql://u:my " + secret + "@127.0.0.1:1/x",  // unexpected spaces
        "postgresql://u:" + secret + "%zz@127.0.0.1:1/x",  // bad percent-encoding
        "postgresql://u@127.0.0.1:1/x?password=" + secret + "&connect_timeout=2",
        "mysql://u:" + secret + "@localhost/x",
    };
    // An unreachable URL keeps each command retrying for its patience (5 s for
    // acquire -n, 10 s for status), so all of them run at once.
    std::vector<Command> commands;
    for (const std::string& url : urls) {
      commands.push_back(env.clock_command({"-vv", "--database", url, "acquire", "-n", "-r", "x"}));
      commands.push_back(env.clock_command({"--database", url, "status"}));
      commands.push_back(
          env.clock_command({"acquire", "-n", "-r", "x"}, {{"CLOCK_DATABASE_URL", url}}));
    }
    const std::string forms[] = {"-vv --database URL acquire -n", "--database URL status",
                                 "CLOCK_DATABASE_URL=URL acquire -n"};
    std::vector<Result> results = run_all(commands, env.path("output"), 120s);
    for (std::size_t i = 0; i < results.size(); ++i) {
      CAPTURE(urls[i / 3]);
      CAPTURE(forms[i % 3]);
      const Result& result = results[i];
      CHECK((result.status == 69 || result.status == 78));
      CHECK(result.err.find(secret) == std::string::npos);
      CHECK(result.out.find(secret) == std::string::npos);
    }
  }

  TEST_CASE("a password in a wrapped command line is masked in status and history") {
    TestEnv env;
    auto holder = env.spawn(env.clock_command(
        {"run", "-r", "job", "--", "sh", "-c", env.holding_script("job"), "sh",
         "postgresql://u:hunter2-cmd@db/x", "password=hunter3-cmd", "PGPASSWORD=hunter4-cmd"}));
    REQUIRE(env.await_started("job"));
    Result status = env.clock({"status", "--format", "json"});
    CHECK_EXIT(status, 0);
    CHECK(status.out.find("postgresql://u:****@db/x") != std::string::npos);
    for (std::string secret : {"hunter2", "hunter3", "hunter4"}) {
      CHECK(status.out.find(secret) == std::string::npos);
      CHECK(env.clock({"status"}).out.find(secret) == std::string::npos);
    }
    env.let_go("job");
    CHECK_EXIT(holder->wait(), 0);
    Result history = env.clock({"history", "--format", "json"});
    CHECK_EXIT(history, 0);
    CHECK(history.out.find("postgresql://u:****@db/x") != std::string::npos);
    CHECK(history.out.find("hunter") == std::string::npos);
  }

  // clock run forks its guard after parsing, once main has blanked the
  // password in argv: the guard's copy of argv would keep it visible.
  TEST_CASE("a password given with --database is not in the guard's /proc/PID/cmdline" *
            only_on("postgres")) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);
    Acquired holder = env.acquire({"-r", "x"});
    const std::string secret = "hunter2-guard";
    std::string url = env.url() + " password=" + secret;
    auto waiter = env.spawn(
        env.clock_command({"--database", url, "run", "-w", "60s", "-r", "x", "--", "true"}));
    REQUIRE(await(
        [&] {
          auto status = env.status();
          return !status.value("waiters", json::array()).empty();
        },
        30s, 50ms));
    // The guard: the waiter's child named clock-guard.
    std::optional<pid_t> guard;
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
      std::ifstream stat(entry.path() / "stat");
      std::string line;
      if (!std::getline(stat, line))
        continue;
      auto close = line.rfind(')');
      auto open = line.find('(');
      if (close == std::string::npos || open == std::string::npos)
        continue;
      std::istringstream rest(line.substr(close + 2));
      char state;
      pid_t parent = 0;
      rest >> state >> parent;
      if (parent == waiter->pid() && line.substr(open + 1, close - open - 1) == "clock-guard")
        guard = static_cast<pid_t>(std::stol(line.substr(0, open)));
    }
    REQUIRE(guard);
    std::string cmdline = proc_cmdline(*guard);
    CHECK(!cmdline.empty());
    CHECK(cmdline.find(secret) == std::string::npos);
    waiter->signal(SIGTERM);
    waiter->wait();
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", holder.credential}), 0);
  }

  TEST_CASE("a password given with --database is not in /proc/PID/cmdline while clock waits" *
            only_on("postgres")) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);
    Acquired holder = env.acquire({"-r", "x"});
    // Trust authentication ignores the password, but libpq still sends it.
    const std::string secret = "hunter2-argv";
    std::string url = env.url() + " password=" + secret;
    for (auto flag_form : {0, 1}) {
      CAPTURE(flag_form);
      std::vector<std::string> args =
          flag_form == 0 ? std::vector<std::string>{"-vv", "--database", url,  "acquire",
                                                    "-w",  "60s",        "-r", "x"}
                         : std::vector<std::string>{
                               "-vv", "--database=" + url, "acquire", "-w", "60s", "-r", "x"};
      auto waiter = env.spawn(env.clock_command(args));
      // Waiting: queued behind the holder, so past parsing and connecting.
      REQUIRE(await(
          [&] {
            auto status = env.status();
            return !status.value("waiters", json::array()).empty();
          },
          30s, 50ms));
      std::string cmdline = proc_cmdline(waiter->pid());
      CHECK(cmdline.find("--database") != std::string::npos);
      CHECK(cmdline.find("acquire") != std::string::npos);
      CHECK(cmdline.find(secret) == std::string::npos);
      CHECK(cmdline.find("password=") != std::string::npos);  // only the value is blanked
      waiter->signal(SIGTERM);
      Result result = waiter->wait();
      CHECK(result.err.find(secret) == std::string::npos);
      CHECK(env.status().dump().find(secret) == std::string::npos);
      REQUIRE(await([&] { return env.status().value("waiters", json::array()).empty(); }, 30s));
    }
    CHECK_EXIT(env.clock({"release", "-r", "x", "--owner", holder.credential}), 0);
    Result history = env.clock({"history", "--format", "json"});
    CHECK(history.out.find(secret) == std::string::npos);
  }
}
