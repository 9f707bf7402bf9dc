// The MariaDB foundation tests: skipped (exit 77) without a server from
// tests/helpers/with-mariadb.sh, unless CI=true, where that is a failure.
#define DOCTEST_CONFIG_IMPLEMENT
#include <cstdio>
#include <cstdlib>
#include <string>

#include <doctest/doctest.h>

int main(int argc, char** argv) {
  if (!std::getenv("CLOCK_TEST_MARIADB_URL")) {
    const char* ci = std::getenv("CI");
    if (ci && std::string(ci) == "true") {
      std::fprintf(stderr, "CLOCK_TEST_MARIADB_URL is not set (run under with-mariadb.sh)\n");
      return 1;
    }
    std::fprintf(stderr, "skipped: no MariaDB server (CLOCK_TEST_MARIADB_URL is not set)\n");
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
