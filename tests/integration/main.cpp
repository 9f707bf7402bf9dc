// The integration suite's entry point: checks which backend to run against
// (CLOCK_TEST_BACKEND) before handing over to doctest. A PostgreSQL run without
// a server fails under CI and reports itself skipped (exit 77) elsewhere.
#define DOCTEST_CONFIG_IMPLEMENT
#include <cstdlib>
#include <iostream>
#include <string>

#include <doctest/doctest.h>

#include "harness.hpp"

namespace {

bool running_in_ci() {
  const char* ci = std::getenv("CI");
  std::string value = ci ? ci : "";
  return !value.empty() && value != "0" && value != "false";
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend = clk::test::backend_name();
  if (backend != "sqlite" && backend != "postgres") {
    std::cerr << "CLOCK_TEST_BACKEND=" << backend << " is not a backend: use sqlite or postgres\n";
    return 2;
  }
  const char* pg_url = std::getenv("CLOCK_TEST_PG_URL");
  if (backend == "postgres" && (!pg_url || !*pg_url)) {
    if (running_in_ci()) {
      std::cerr << "FAIL: CLOCK_TEST_PG_URL is not set, and CI requires the PostgreSQL run. "
                   "Start a server and set it to a libpq keyword string, e.g. "
                   "'host=/tmp/pg port=5433 user=postgres dbname=postgres'.\n";
      return 1;
    }
    std::cout << "NOTICE: integration-postgres skipped: CLOCK_TEST_PG_URL is not set. Set it to a "
                 "libpq keyword string of a server where tests may create databases, e.g. "
                 "'host=/tmp/pg port=5433 user=postgres dbname=postgres'.\n";
    return 77;
  }
  std::cout << "integration tests: backend " << backend << ", clock "
            << clk::test::TestEnv::clock_binary() << "\n";

  doctest::Context context(argc, argv);
  return context.run();
}
