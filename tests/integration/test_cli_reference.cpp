// The reference agrees with the binary: every option that
// `clock --help` and each `clock COMMAND --help` list is in man/clock.1 and
// every option the man page documents for a command is in its --help; every
// setting is alike in `clock config`, config/clock.toml and the man page's
// FILES; every exit code (the man page's EXIT STATUS) is in the man page and
// in --help where it applies, and a mistyped command line gets a message that
// says what to type instead.
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "harness.hpp"

using namespace clk::test;

namespace {

const std::vector<std::string> k_commands = {"acquire", "release", "renew", "status",
                                             "history", "run",     "gc",    "init",
                                             "config",  "check",   "missed"};

// The man page as a reader sees its words: groff's "\-" is a plain '-'.
std::string man_text() {
  std::string text = read_file(fs::path(CLOCK_TEST_SQL_DIR).parent_path() / "man" / "clock.1");
  return std::regex_replace(text, std::regex(R"(\\-)"), "-");
}

fs::path source_dir() {
  return fs::path(CLOCK_TEST_SQL_DIR).parent_path();
}

// The options a man page section documents: the tags of its tagged
// paragraphs (".TP" then ".BI \-\-ttl \" D\"" or ".BR \-n \", \" \-\-no\-wait").
std::set<std::string> tagged_options_in(const std::string& section) {
  std::set<std::string> options;
  std::regex tag(R"(\.TP\n\.B[IR]? ([^\n]*))");
  std::regex option(R"((^|[\s"])(--[a-z][a-z-]*[a-z]))");
  for (auto it = std::sregex_iterator(section.begin(), section.end(), tag);
       it != std::sregex_iterator(); ++it) {
    std::string line = (*it)[1];
    for (auto o = std::sregex_iterator(line.begin(), line.end(), option);
         o != std::sregex_iterator(); ++o)
      options.insert((*o)[2]);
  }
  return options;
}

// The text of a man page section or subsection: from its heading to the next
// heading of its level or above.
std::string man_section(const std::string& man, const std::string& heading) {
  auto start = man.find(heading + "\n");
  if (start == std::string::npos)
    return "";
  std::size_t end = man.size();
  for (const char* next : {"\n.SH ", "\n.SS "}) {
    if (heading.starts_with(".SH") && std::string_view(next) == "\n.SS ")
      continue;
    end = std::min(end, man.find(next, start + heading.size()));
  }
  return man.substr(start, end - start);
}

// The keys config/clock.toml documents: each commented-out "#key = …" line
// under its [table] (or a "#[table]" of its own, as [ping.urls]).
std::set<std::string> keys_of_config_file() {
  std::set<std::string> keys;
  std::string table;
  std::istringstream lines(read_file(source_dir() / "config" / "clock.toml"));
  std::smatch m;
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_match(line, m, std::regex(R"(^\[([a-z_]+)\]\s*$)"))) {
      table = m[1];
    } else if (std::regex_match(line, m, std::regex(R"(^#\[([a-z_]+\.[a-z_]+)\]\s*$)"))) {
      keys.insert(m[1]);
    } else if (std::regex_match(line, m, std::regex(R"(^#([a-z_]+) = .*)"))) {
      keys.insert(table.empty() ? std::string(m[1]) : table + "." + std::string(m[1]));
    }
  }
  return keys;
}

// The keys the man page's FILES lists for the config file.
std::set<std::string> keys_of_man_page(const std::string& man) {
  auto begin = man.find("It is TOML with these keys:");
  auto end = man.find("Durations are strings", begin);
  std::string list = man.substr(begin, end - begin);
  std::set<std::string> keys;
  std::regex key(R"(\n\.BR? ([a-z_]+(\.[a-z_]+)?)\b)");
  for (auto it = std::sregex_iterator(list.begin(), list.end(), key); it != std::sregex_iterator();
       ++it)
    keys.insert((*it)[1]);
  return keys;
}

std::set<std::string> long_options_in(const std::string& help) {
  std::set<std::string> options;
  std::regex option(R"((^|[\s,\[])(--[a-z][a-z-]*[a-z]))");
  for (auto it = std::sregex_iterator(help.begin(), help.end(), option);
       it != std::sregex_iterator(); ++it)
    options.insert((*it)[2]);
  return options;
}

}  // namespace

TEST_SUITE("cli reference") {
  TEST_CASE("every option of every command's --help is in the man page") {
    TestEnv env;
    std::string man = man_text();
    std::vector<std::vector<std::string>> helps = {{"--help"}};
    for (const auto& command : k_commands)
      helps.push_back({command, "--help"});
    for (const auto& args : helps) {
      Result help = env.clock(args);
      CAPTURE(args.front());
      REQUIRE_EXIT(help, 0);
      auto options = long_options_in(help.out);
      CHECK(options.size() > 0);
      for (const auto& option : options) {
        CAPTURE(option);
        // A man page names an option in bold where it documents it.
        CHECK(man.find(option) != std::string::npos);
      }
      if (args.front() != "--help") {
        CAPTURE(args.front());
        CHECK(man.find(".SS \"clock " + args.front() + "\"") != std::string::npos);
      }
    }
  }

  TEST_CASE("every option the man page documents for a command is in its --help") {
    TestEnv env;
    std::string man = man_text();
    for (const auto& command : k_commands) {
      CAPTURE(command);
      Result help = env.clock({command, "--help"});
      REQUIRE_EXIT(help, 0);
      auto in_help = long_options_in(help.out);
      auto documented = tagged_options_in(man_section(man, ".SS \"clock " + command + "\""));
      for (const auto& option : documented) {
        CAPTURE(option);
        CHECK(in_help.count(option) == 1);
      }
    }
    Result help = env.clock({"--help"});
    REQUIRE_EXIT(help, 0);
    auto in_help = long_options_in(help.out);
    for (const auto& option : tagged_options_in(man_section(man, ".SH GLOBAL OPTIONS"))) {
      CAPTURE(option);
      CHECK(in_help.count(option) == 1);
    }
  }

  TEST_CASE("every setting is in clock config, config/clock.toml and the man page alike") {
    TestEnv env;
    Result config = env.clock({"config", "--format", "json"});
    REQUIRE_EXIT(config, 0);
    std::set<std::string> shown;
    for (const auto& setting : nlohmann::json::parse(config.out))
      shown.insert(setting["key"].get<std::string>());
    // Not settings of the file: where it was found, and CLOCK_OWNER's id.
    shown.erase("config_file");
    shown.erase("owner");
    auto documented = keys_of_config_file();
    CHECK(documented.size() > 10);
    CHECK(shown == documented);
    CHECK(keys_of_man_page(man_text()) == documented);
  }

  TEST_CASE("the help and the man page name what the reference names elsewhere") {
    TestEnv env;
    std::string man = man_text();
    // --database's default: the precedence of the man page and clock.toml.
    Result help = env.clock({"--help"});
    REQUIRE_EXIT(help, 0);
    CHECK(help.out.find("config file's database") != std::string::npos);
    // Every scheme a URL may have.
    for (const char* scheme :
         {"sqlite:", "postgresql://", "postgres://", "mysql://", "mariadb://"}) {
      CAPTURE(scheme);
      CHECK(help.out.find(scheme) != std::string::npos);
    }
    // Every event kind of history's JSON Schema, in --event's help and the
    // man page's.
    Result history = env.clock({"history", "--help"});
    REQUIRE_EXIT(history, 0);
    auto schema = nlohmann::json::parse(
        read_file(source_dir() / "packaging" / "schema" / "history.schema.json"));
    auto event_kinds = schema["$defs"]["event"]["properties"]["event"]["enum"];
    REQUIRE(event_kinds.size() >= 9);
    std::string event_help = std::regex_replace(history.out, std::regex(R"(\s+)"), " ");
    std::string event_man = man_section(man, ".SS \"clock history\"");
    event_man = event_man.substr(event_man.find("--event"));
    for (const auto& kind : event_kinds) {
      CAPTURE(kind);
      CHECK(event_help.find(kind.get<std::string>()) != std::string::npos);
      CHECK(event_man.find(kind.get<std::string>()) != std::string::npos);
    }
    // Every backend in the page's DESCRIPTION and in "Fair waiting".
    for (const char* section : {".SH DESCRIPTION", ".SS Fair waiting"}) {
      std::string text = man_section(man, section);
      CAPTURE(section);
      for (const char* backend : {"SQLite", "PostgreSQL", "MariaDB"}) {
        CAPTURE(backend);
        CHECK(text.find(backend) != std::string::npos);
      }
    }
    // A JSON Schema that --help names is found where the reader is: the
    // package's path and the source tree's, which exists.
    for (const char* command : {"status", "history", "missed"}) {
      Result command_help = env.clock({command, "--help"});
      REQUIRE_EXIT(command_help, 0);
      std::string name = std::string(command) + ".schema.json";
      CAPTURE(command);
      CHECK(command_help.out.find("/usr/share/doc/clock/schema/" + name) != std::string::npos);
      CHECK(command_help.out.find("packaging/schema/" + name) != std::string::npos);
      CHECK(fs::exists(source_dir() / "packaging" / "schema" / name));
    }
  }

  TEST_CASE("every exit code of man clock, EXIT STATUS is in the man page and in --help") {
    TestEnv env;
    std::string man = man_text();
    auto exit_status = man.substr(man.find(".SH EXIT STATUS"));
    Result help = env.clock({"--help"});
    REQUIRE_EXIT(help, 0);
    for (std::string code :
         {"1", "64", "69", "70", "74", "75", "76", "77", "78", "79", "124", "126", "127"}) {
      CAPTURE(code);
      // A tagged paragraph's tag: ".B 64", or ".BR 126 \", \" 127".
      CHECK(std::regex_search(exit_status, std::regex("\\.BR? [^\\n]*\\b" + code + "\\b")));
      CHECK(std::regex_search(help.out, std::regex("\\b" + code + "\\b")));
    }
  }

  TEST_CASE("clock run --help shows -- CMD, the TTL default and the command's exit codes") {
    TestEnv env;
    Result help = env.clock({"run", "--help"});
    REQUIRE_EXIT(help, 0);
    INFO(help.out);
    CHECK(help.out.find("-- CMD [ARG...]") != std::string::npos);
    CHECK(help.out.find("else 90s") != std::string::npos);
    for (const char* code : {"126", "127", "75", "79", "124"}) {
      CAPTURE(code);
      CHECK(help.out.find(code) != std::string::npos);
    }
  }

  TEST_CASE("an unknown option names itself and the closest known one, exit 64") {
    TestEnv env;
    Result typo = env.clock({"acquire", "--resrouce", "x"});
    CHECK_EXIT(typo, 64);
    REQUIRE(typo.err_lines().size() == 1);
    CHECK(typo.err.find("unknown option --resrouce") != std::string::npos);
    CHECK(typo.err.find("did you mean --resource?") != std::string::npos);

    Result global = env.clock({"--databse", env.url(), "status"});
    CHECK_EXIT(global, 64);
    CHECK(global.err.find("did you mean --database?") != std::string::npos);

    Result command = env.clock({"stauts"});
    CHECK_EXIT(command, 64);
    CHECK(command.err.find("did you mean status?") != std::string::npos);
  }

  // libpq reads a URL with several hosts and no ports as a port list of
  // empty entries: each is 5432, and PGPORT does not apply.
  TEST_CASE("a multi-host URL without ports names the ports libpq tried" * only_on("postgres")) {
    TestEnv env;
    Result result = env.clock(
        {"acquire", "-n", "-r", "x"},
        {{"CLOCK_DATABASE_URL", "postgresql://127.0.0.1,127.0.0.2/clock?connect_timeout=1"},
         {"PGPORT", "1"}});
    CHECK_EXIT(result, 69);
    INFO(result.err);
    CHECK(result.err.find("127.0.0.1:5432,127.0.0.2:5432") != std::string::npos);
    CHECK(result.err.find(":1,") == std::string::npos);
  }

  TEST_CASE("a command after clock run's options without -- is told to put -- before it") {
    TestEnv env;
    for (std::vector<std::string> args : {std::vector<std::string>{"run", "-r", "x", "ls", "-l"},
                                          {"run", "ls", "-l"},
                                          {"run", "-r", "x", "-n", "ls"}}) {
      CAPTURE(args.back());
      Result result = env.clock(args);
      CHECK_EXIT(result, 64);
      CHECK(result.err_lines().size() == 1);
      CHECK(result.err.find("put -- before the command") != std::string::npos);
    }
    Result resources = env.clock({"run", "-r", "x", "ls"});  // "ls" is taken as a resource
    CHECK_EXIT(resources, 64);
    CHECK(resources.err.find("-- COMMAND") != std::string::npos);
  }
}
