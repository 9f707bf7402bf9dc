// The error type and the exit-code table of man clock, EXIT STATUS.
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "error.hpp"

using clk::Error;
using clk::exit_status;
using clk::ExitCode;

namespace {

// man clock, EXIT STATUS, transcribed: each code and the exit status the contract gives it.
const std::vector<std::pair<ExitCode, int>> k_spec_table = {
    {ExitCode::ok, 0},          {ExitCode::usage, 64},          {ExitCode::unavailable, 69},
    {ExitCode::internal, 70},   {ExitCode::local_database, 74}, {ExitCode::not_acquired, 75},
    {ExitCode::deadlock, 76},   {ExitCode::not_owner, 77},      {ExitCode::config, 78},
    {ExitCode::lease_lost, 79}, {ExitCode::out_of_time, 124},   {ExitCode::cannot_execute, 126},
    {ExitCode::not_found, 127},
};

}  // namespace

TEST_SUITE("error") {
  TEST_CASE("each exit code has the status the man page's EXIT STATUS gives it") {
    for (const auto& [code, status] : k_spec_table) {
      CAPTURE(status);
      CHECK(exit_status(code) == status);
    }
  }

  TEST_CASE("exit_status is usable at compile time") {
    static_assert(exit_status(ExitCode::not_acquired) == 75);
    static_assert(exit_status(ExitCode::not_found) == 127);
  }

  TEST_CASE("every code has its own non-empty name") {
    std::set<std::string> names;
    for (const auto& [code, status] : k_spec_table) {
      std::string name(clk::code_name(code));
      CAPTURE(status);
      CHECK_FALSE(name.empty());
      CHECK(name != "unknown");
      CHECK(names.insert(name).second);
    }
    CHECK(clk::code_name(ExitCode::not_acquired) == "not_acquired");
    CHECK(clk::code_name(ExitCode::usage) == "usage");
  }

  TEST_CASE("an Error carries its code and its one-line message") {
    try {
      throw Error(ExitCode::not_owner, "x is held by another owner; release it with its owner id");
    } catch (const std::runtime_error& e) {  // callers may catch it as a standard exception
      auto* error = dynamic_cast<const Error*>(&e);
      REQUIRE(error != nullptr);
      CHECK(error->code() == ExitCode::not_owner);
      CHECK(std::string(e.what()) == "x is held by another owner; release it with its owner id");
    }
  }
}
