// The integration suite's entry point: checks which backend to run against
// (CLOCK_TEST_BACKEND) before handing over to doctest. A PostgreSQL or MariaDB
// run without a server fails under CI and reports itself skipped (exit 77)
// elsewhere.
#define DOCTEST_CONFIG_IMPLEMENT
#include <cstdlib>
#include <iostream>
#include <string>

#include <doctest/doctest.h>

#include "common_helpers.hpp"
#include "harness.hpp"

int main(int argc, char** argv) {
  std::string backend = clk::test::backend_name();
  if (backend != "sqlite" && backend != "postgres" && backend != "mariadb") {
    std::cerr << "CLOCK_TEST_BACKEND=" << backend
              << " is not a backend: use sqlite, postgres or mariadb\n";
    return 2;
  }
  const char* pg_url = std::getenv("CLOCK_TEST_PG_URL");
  if (backend == "postgres" && (!pg_url || !*pg_url)) {
    if (clk::test::running_in_ci()) {
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
  const char* mariadb_url = std::getenv("CLOCK_TEST_MARIADB_URL");
  if (backend == "mariadb" && (!mariadb_url || !*mariadb_url)) {
    if (clk::test::running_in_ci()) {
      std::cerr << "FAIL: CLOCK_TEST_MARIADB_URL is not set, and CI requires the MariaDB run. "
                   "Run the suite under tests/helpers/with-mariadb.sh, which starts a throwaway "
                   "server and sets it.\n";
      return 1;
    }
    std::cout << "NOTICE: the MariaDB run is skipped: CLOCK_TEST_MARIADB_URL is not set. Run "
                 "it under tests/helpers/with-mariadb.sh (Debian's mariadb-server), which starts "
                 "a throwaway server and sets it.\n";
    return 77;
  }
  std::cout << "integration tests: backend " << backend << ", clock "
            << clk::test::TestEnv::clock_binary() << "\n";

  // Why the tests that cannot apply to this backend are skipped (not_on).
  for (const auto& reason : clk::test::skip_reasons())
    std::cout << "skipped on " << backend << ": " << reason << "\n";

  doctest::Context context(argc, argv);
  return context.run();
}
