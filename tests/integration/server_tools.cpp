// See server_tools.hpp.
#include "server_tools.hpp"

#include <variant>

#include "mariadb_tools.hpp"
#include "postgres_tools.hpp"

namespace clk::test::server {

using namespace std::chrono_literals;

namespace {

bool on_postgres() {
  return backend_name() == "postgres";
}

}  // namespace

doctest::skip only_on_servers() {
  return doctest::skip(backend_name() != "postgres" && backend_name() != "mariadb");
}

Result stop(const TestEnv& env) {
  if (on_postgres())
    return pg::pg_ctl(env, {"stop", "-m", "fast"});
  return maria::mariadb_ctl(env, "stop");
}

Result start(const TestEnv& env) {
  if (on_postgres()) {
    Result started = pg::pg_ctl(env, {"start"});
    await([&] { return pg::server_answers(env); }, 60s, 100ms);
    return started;
  }
  return maria::mariadb_ctl(env, "start");
}

bool answers(const TestEnv& env) {
  return on_postgres() ? pg::server_answers(env) : maria::server_answers(env);
}

struct Restorer::Restoring {
  std::variant<std::monostate, pg::ServerRestorer, maria::ServerRestorer> restorer;
};

Restorer::Restorer(const TestEnv& env) : m_restoring(std::make_unique<Restoring>()) {
  if (on_postgres())
    m_restoring->restorer.emplace<pg::ServerRestorer>(env);
  else
    m_restoring->restorer.emplace<maria::ServerRestorer>(env);
}

Restorer::~Restorer() = default;

}  // namespace clk::test::server
