// The reference agrees with the binary (issue 29): every option that
// `clock --help` and each `clock COMMAND --help` list is in man/clock.1, every
// exit code of SPEC §4 is in the man page and in --help where it applies, and
// a mistyped command line gets a message that says what to type instead.
#include <regex>
#include <set>
#include <string>

#include <doctest/doctest.h>

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

  TEST_CASE("every exit code of SPEC §4 is in the man page and in --help") {
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
