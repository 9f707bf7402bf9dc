// How far apart the clocks of a Galera cluster's nodes are. Each node judges
// a lease's expiry by its own clock (clock_now_us() is read where the
// statement runs; the rows replicate as values), so a node whose clock runs
// ahead sees a lease written by another node expire early. clock measures
// that rather than assuming it away: it reads each node's clock the way NTP
// reads a server's (the node's time against the middle of this host's round
// trip, the shortest of a few), so this host's own clock cancels out of the
// difference between two nodes, and the round trips bound the error.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "store/mariadb/connection.hpp"

namespace clk::store::mariadb {

// One node's clock as this host read it.
struct NodeClock {
  MariadbHost host;
  std::chrono::microseconds offset;       // the node's time minus this host's
  std::chrono::microseconds uncertainty;  // half the round trip it was read in
};

// The clock of the node `connection` reaches; nullopt when it cannot be
// read.
std::optional<NodeClock> read_node_clock(Connection& connection);

// Each host's clock, read on a connection of its own (given a second to
// connect); a host that cannot be reached is left out.
std::vector<NodeClock> read_node_clocks(const ConnectOptions& options,
                                        const std::vector<MariadbHost>& hosts);

// What the clocks mean for the node a host uses.
struct SkewVerdict {
  // The node furthest from ours and by how much ours is ahead of it
  // (negative: behind); none when no other node could be read.
  std::optional<NodeClock> furthest;
  std::chrono::microseconds skew{0};
  // How long a grant over an expired lease waits past its expiry, as our
  // node's clock reads it: k_skew_warning plus as far as our clock may run
  // ahead of another node's (measured, with its error; the whole cap when
  // it cannot be measured). So a grant over a lease written on any node
  // comes k_skew_warning after its expiry by that node's clock, or later.
  std::chrono::microseconds expiry_margin{0};
  // Set when our node is certainly ahead of another by more than the cap:
  // the one-line refusal (a node behind sees leases expire late, which is
  // safe, so it only warns).
  std::optional<std::string> refusal;
  // Set when the skew is above k_skew_warning (or cannot be measured).
  std::optional<std::string> warning;
};

// Skew up to this much is what NTP keeps nodes within on a bad day; above
// it clock warns, and it is the least margin a grant over an expired lease
// waits on a Galera node.
inline constexpr std::chrono::milliseconds k_skew_warning{100};

// `ours` is the node the host uses (nullopt: it could not be read), `others`
// every other node read; `cap` is mariadb.galera_max_skew.
SkewVerdict judge_skew(const std::optional<NodeClock>& ours, const std::vector<NodeClock>& others,
                       std::chrono::milliseconds cap);

}  // namespace clk::store::mariadb
