// See node_clocks.hpp.
#include "store/mariadb/node_clocks.hpp"

#include <cstdio>
#include <cstdlib>

#include "util/duration.hpp"

namespace clk::store::mariadb {

namespace {

using std::chrono::duration_cast;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::system_clock;

// Reads of one node's clock; the one with the shortest round trip is kept.
constexpr int k_samples = 3;

microseconds since_epoch(system_clock::time_point at) {
  return duration_cast<microseconds>(at.time_since_epoch());
}

// clock_now_us()'s expression: the app roles may not execute that function.
constexpr const char* k_now_sql =
    "SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01', UTC_TIMESTAMP(6))";

// "3.012 s": the skew to the millisecond, whatever its sign.
std::string seconds_text(microseconds value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f s", static_cast<double>(std::abs(value.count())) / 1e6);
  return text;
}

}  // namespace

std::optional<NodeClock> read_node_clock(Connection& connection) {
  try {
    Statement statement = connection.prepare("read the node's clock", k_now_sql);
    std::optional<NodeClock> best;
    for (int i = 0; i < k_samples; ++i) {
      auto sent = system_clock::now();
      auto rows = statement.query({});
      auto received = system_clock::now();
      if (rows.empty() || rows.front().empty() || !rows.front().front())
        return std::nullopt;
      microseconds node{std::strtoll(rows.front().front()->c_str(), nullptr, 10)};
      microseconds half_trip = duration_cast<microseconds>(received - sent) / 2;
      microseconds middle = since_epoch(sent) + half_trip;
      if (!best || half_trip < best->uncertainty)
        best = NodeClock{connection.host(), node - middle, half_trip};
    }
    return best;
  } catch (const std::exception&) {
    return std::nullopt;  // a node that is down is not compared
  }
}

std::vector<NodeClock> read_node_clocks(const ConnectOptions& options,
                                        const std::vector<MariadbHost>& hosts) {
  std::vector<NodeClock> clocks;
  for (const MariadbHost& host : hosts) {
    ConnectOptions one = options;
    one.url.hosts = {host};
    one.connect_timeout = std::chrono::seconds(1);
    one.read_timeout = std::chrono::seconds(2);
    one.write_timeout = std::chrono::seconds(2);
    Connection connection(one);
    if (auto clock = read_node_clock(connection))
      clocks.push_back(*clock);
  }
  return clocks;
}

SkewVerdict judge_skew(const std::optional<NodeClock>& ours, const std::vector<NodeClock>& others,
                       milliseconds cap) {
  SkewVerdict verdict;
  verdict.expiry_margin = k_skew_warning + cap;
  if (!ours || others.empty()) {
    // Unmeasured is not assumed small: grants over an expired lease wait
    // out the whole cap.
    verdict.warning =
        "the clocks of this Galera node and the others cannot be compared (list every node in "
        "the URL: mariadb://user@node1,node2,node3/db); a grant over an expired lease waits " +
        seconds_text(verdict.expiry_margin) + " (mariadb.galera_max_skew)";
    return verdict;
  }
  microseconds ahead_most{0};
  for (const NodeClock& other : others) {
    microseconds skew = ours->offset - other.offset;
    microseconds error = ours->uncertainty + other.uncertainty;
    if (!verdict.furthest || std::abs(skew.count()) > std::abs(verdict.skew.count())) {
      verdict.furthest = other;
      verdict.skew = skew;
    }
    ahead_most = std::max(ahead_most, skew + error);
    // Only a node ahead is refused: one behind sees leases expire late.
    if (skew - error > cap && !verdict.refusal) {
      verdict.refusal = "the clock of Galera node " + ours->host.label() + " is " +
                        seconds_text(skew) + " ahead of " + other.host.label() +
                        "'s, more than mariadb.galera_max_skew (" + util::format_duration(cap) +
                        "): it would see leases expire early, so it grants nothing; synchronise "
                        "the nodes' clocks (NTP), use another node, or raise the cap";
    }
  }
  verdict.expiry_margin = k_skew_warning + ahead_most;
  if (std::abs(verdict.skew.count()) > duration_cast<microseconds>(k_skew_warning).count()) {
    verdict.warning =
        "the clock of Galera node " + ours->host.label() + " is " + seconds_text(verdict.skew) +
        (verdict.skew.count() > 0 ? " ahead of " : " behind ") + verdict.furthest->host.label() +
        "'s (more than " + util::format_duration(k_skew_warning) +
        "); a grant over an expired lease waits " + seconds_text(verdict.expiry_margin) +
        " past its expiry";
  }
  return verdict;
}

}  // namespace clk::store::mariadb
