// The test server of the backend under test, whichever server it is: what a
// test of server trouble, written once for PostgreSQL and MariaDB, needs.
// Each server runs under its own helper (pg-ctl.sh, mariadb-ctl.sh); this
// picks the one of CLOCK_TEST_BACKEND.
#pragma once

#include <memory>

#include <doctest/doctest.h>

#include "harness.hpp"

namespace clk::test::server {

// Decorates a TEST_CASE that applies to the SQL servers: skipped on SQLite.
doctest::skip only_on_servers();

// Stops the server (a fast, clean shutdown: clients see their connections
// closed, then refused) and starts it again (returning once it answers).
Result stop(const TestEnv& env);
Result start(const TestEnv& env);
bool answers(const TestEnv& env);

// Makes sure, when it goes out of scope, that the server is up again and
// answers, even if the test failed halfway. Declare it after the TestEnv.
class Restorer {
 public:
  explicit Restorer(const TestEnv& env);
  ~Restorer();
  Restorer(const Restorer&) = delete;
  Restorer& operator=(const Restorer&) = delete;

 private:
  struct Restoring;
  std::unique_ptr<Restoring> m_restoring;
};

}  // namespace clk::test::server
