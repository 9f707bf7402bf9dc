// The server store's session on MariaDB (store/server/session.hpp): a
// routine is a procedure of this release's set (clock_NAME_rXXXXXXXX),
// CALLed with bound parameters, lists as JSON arrays; a waiter looks again
// at the pace of waiting_pace.hpp (MariaDB notifies nobody); the schema is
// checked and migrated on a process's first use, and on a Galera node the
// nodes' clocks are compared (node_clocks.hpp).
#pragma once

#include <optional>
#include <string>

#include "store/mariadb/connection.hpp"
#include "store/mariadb/node_clocks.hpp"
#include "store/mariadb/waiting_pace.hpp"
#include "store/server/session.hpp"
#include "store/store_options.hpp"

namespace clk::store::mariadb {

class Session final : public server::Session {
 public:
  // Parses the URL (clk::Error(config) if bad); connects on first use.
  explicit Session(const StoreOptions& options);

  // Error 1370 (the login may not execute the procedure) is NotGranted.
  std::string call(std::string_view what, std::string_view routine, const server::Args& args,
                   server::Resend resend) override;
  void each_row(std::string_view what, std::string_view routine, const server::Args& args,
                const std::function<void(const RowView&)>& visit) override;
  InstantFormat instant_format() const override { return InstantFormat::epoch_microseconds; }

  void patience_until(Clock::time_point until) override;
  void set_acquire_deadline(Clock::time_point deadline) override;
  // One attempt by the caller's deadline (and at least a second, so that
  // the attempt at the deadline that ends every wait gets an answer).
  void one_acquire_attempt() override;
  // On a Galera node, the margin that covers the nodes' clock skew; a node
  // whose clock runs ahead of another's by certainly more than
  // mariadb.galera_max_skew grants nothing and removes nothing (78).
  std::optional<std::int64_t> expiry_margin() override;

  void blocked(const AcquireReply& reply, const lock::OwnerId& owner) override;
  void blocked_behind_transaction(const lock::OwnerId& owner) override;
  // Between looks, a waiter holds no connection once the sleep is long.
  void wait_for_change(Clock::time_point until) override;

  // No watch: a holder learns of a loss at its next renewal.
  bool may_have_lost(const lock::OwnerId&) override { return true; }
  std::optional<std::chrono::milliseconds> watch_interval() const override { return std::nullopt; }

  MigrationReport migrate() override;
  std::chrono::milliseconds idle_limit() const override { return k_idle; }
  void rest() override;
  // The Galera node's clock skew, owner secrets in the server's logs, and
  // retired routine sets.
  std::vector<std::string> setup_warnings() override;
  std::vector<std::string> retired_routines() override;
  std::vector<std::string> missing_run_privileges() override;

 private:
  // A holder's connection is closed once idle this long (man clock, COMMANDS).
  static constexpr std::chrono::milliseconds k_idle{1000};

  std::vector<Row> call_rows(std::string_view what, std::string_view routine,
                             const server::Args& args, Resend resend);
  void first_use();
  void judge_node_clocks();
  void refuse_if_ahead() const;

  ConnectOptions m_options;
  Connection m_connection;
  std::chrono::milliseconds m_galera_max_skew;
  std::optional<SkewVerdict> m_skew;  // measured on a Galera node
  std::chrono::milliseconds m_margin{0};
  bool m_checked = false;          // first_use() has looked (and migrated)
  bool m_procedures_seen = false;  // a call found this release's procedures
  Clock::time_point m_acquire_deadline = Clock::time_point::max();
  Clock::time_point m_last_call{};
  WaitingPace m_pace;
};

}  // namespace clk::store::mariadb
