// A URL with several hosts (the nodes of a Galera cluster) and the skew
// check between their clocks (src/store/mariadb/connection.*, node_clocks.*):
// a host that refuses connections is passed over, each host's clock is read
// against this one's, and judge_skew turns the readings into the margin,
// the warning and the refusal. Against the real server of with-mariadb.sh
// where a server is read; judge_skew is plain arithmetic.
#include <chrono>
#include <cstdlib>
#include <string>

#include <doctest/doctest.h>

#include "store/mariadb/connection.hpp"
#include "store/mariadb/node_clocks.hpp"
#include "store/mariadb_url.hpp"

using namespace std::chrono_literals;
using clk::store::MariadbHost;
using clk::store::mariadb::Connection;
using clk::store::mariadb::ConnectOptions;
using clk::store::mariadb::judge_skew;
using clk::store::mariadb::k_skew_warning;
using clk::store::mariadb::NodeClock;
using clk::store::mariadb::read_node_clocks;

namespace {

// The helper's server over TCP, after a host where nothing listens (port 1).
ConnectOptions dead_host_first() {
  std::string port = std::getenv("CLOCK_TEST_MARIADB_PORT");
  ConnectOptions options;
  options.url =
      clk::store::parse_mariadb_url("mariadb://root@127.0.0.1:1,127.0.0.1:" + port + "/mysql");
  return options;
}

NodeClock node(const std::string& name, std::chrono::microseconds offset,
               std::chrono::microseconds uncertainty = 200us) {
  return NodeClock{MariadbHost{name, 3306}, offset, uncertainty};
}

}  // namespace

TEST_SUITE("mariadb node list") {
  TEST_CASE("a host that refuses connections is passed over for the next of the list") {
    Connection connection(dead_host_first());
    auto rows = connection.prepare("read", "SELECT 1").query({});
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].at(0) == "1");
    CHECK(connection.host().port == dead_host_first().url.hosts[1].port);
    // The next connection goes straight to the host that answered.
    connection.close();
    connection.open();
    CHECK(connection.host().port == dead_host_first().url.hosts[1].port);
  }

  TEST_CASE("each host's clock is read against this host's; a host that is down is left out") {
    auto options = dead_host_first();
    auto clocks = read_node_clocks(options, options.url.hosts);
    REQUIRE(clocks.size() == 1);
    CHECK(clocks[0].host.port == options.url.hosts[1].port);
    // The same machine's clock: equal to within the round trip and a
    // scheduling slice of a loaded test machine.
    CHECK(std::chrono::abs(clocks[0].offset) < 250ms);
    CHECK(clocks[0].uncertainty < 250ms);
  }

  TEST_CASE("a node ahead of another by more than the cap is refused, naming both") {
    auto verdict = judge_skew(node("n3", 3s), {node("n1", 0s), node("n2", 10ms)}, 500ms);
    REQUIRE(verdict.refusal);
    CHECK(verdict.refusal->find("n3:3306 is 3.000 s ahead of n1:3306") != std::string::npos);
    CHECK(verdict.refusal->find("mariadb.galera_max_skew (500ms)") != std::string::npos);
    // Within the cap it is not refused, and waits out its lead plus the bound.
    auto wide = judge_skew(node("n3", 3s), {node("n1", 0s)}, 5s);
    CHECK(!wide.refusal);
    CHECK(wide.expiry_margin >= 3s + k_skew_warning);
    CHECK(wide.expiry_margin <= 3s + k_skew_warning + 1ms);
  }

  TEST_CASE("a node behind the others is warned of, not refused: it sees leases expire late") {
    auto verdict = judge_skew(node("n1", 0s), {node("n3", 3s)}, 500ms);
    CHECK(!verdict.refusal);
    REQUIRE(verdict.warning);
    CHECK(verdict.warning->find("n1:3306 is 3.000 s behind n3:3306") != std::string::npos);
    CHECK(verdict.expiry_margin == k_skew_warning);
  }

  TEST_CASE("clocks within the bound: no warning, the bound and the error as the margin") {
    auto verdict = judge_skew(node("n1", 20ms), {node("n2", 0s), node("n3", 5ms)}, 500ms);
    CHECK(!verdict.refusal);
    CHECK(!verdict.warning);
    CHECK(verdict.expiry_margin == k_skew_warning + 20ms + 400us);
  }

  TEST_CASE("clocks that cannot be compared are not assumed close: the whole cap is waited out") {
    auto alone = judge_skew(node("n1", 0s), {}, 500ms);
    CHECK(!alone.refusal);
    REQUIRE(alone.warning);
    CHECK(alone.warning->find("list every node in the URL") != std::string::npos);
    CHECK(alone.expiry_margin == k_skew_warning + 500ms);
    CHECK(judge_skew(std::nullopt, {node("n2", 0s)}, 1s).expiry_margin == k_skew_warning + 1s);
  }
}
