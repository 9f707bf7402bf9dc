// The server store's session on PostgreSQL (store/server/session.hpp): a
// routine is a function of the schema's routine set, called with its text
// parameters cast in the call; a waiter LISTENs (queue_wait.hpp); the
// schema is checked in the first call's own round trip and migrated on
// first use where the role may.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>

#include "store/postgres/connection.hpp"
#include "store/postgres/lease_watch.hpp"
#include "store/postgres/queue_wait.hpp"
#include "store/server/session.hpp"
#include "store/store_options.hpp"

namespace clk::store::postgres {

class Session final : public server::Session {
 public:
  // Connects on the first call, within that call's deadline. Throws
  // clk::Error(config) for an invalid pg_schema.
  explicit Session(const StoreOptions& options);

  std::string call(std::string_view what, std::string_view routine, const server::Args& args,
                   server::Resend resend) override;
  void each_row(std::string_view what, std::string_view routine, const server::Args& args,
                const std::function<void(const RowView&)>& visit) override;
  InstantFormat instant_format() const override { return InstantFormat::utc_text; }

  void patience_until(Clock::time_point until) override;
  void set_acquire_deadline(Clock::time_point deadline) override;
  // Tried once (the acquire loop tries again, with the same request id).
  void one_acquire_attempt() override;
  std::optional<std::int64_t> expiry_margin() override { return std::nullopt; }

  void blocked(const AcquireReply& reply, const lock::OwnerId& owner) override;
  void blocked_behind_transaction(const lock::OwnerId& owner) override;
  void wait_for_change(Clock::time_point until) override;

  // With --watch-lease (lease_watch.hpp): a notification, not a round trip.
  bool may_have_lost(const lock::OwnerId& owner) override;
  std::optional<std::chrono::milliseconds> watch_interval() const override;

  MigrationReport migrate() override;
  // One second: the cost of a reconnect (docs/performance.md) stays off a
  // short job's path (acquire and release share one connection).
  std::chrono::milliseconds idle_limit() const override { return k_idle; }
  void rest() override;
  // The server streams to asynchronous standbys only (replication.hpp); its
  // log keeps owner secrets (server_log.hpp); retired routine sets.
  std::vector<std::string> setup_warnings() override;
  std::vector<std::string> retired_routines() override;
  // EXECUTE on the functions clock run calls (privileges.hpp).
  std::vector<std::string> missing_run_privileges() override;

 private:
  static constexpr std::chrono::milliseconds k_idle{1000};

  void migrate_schema();
  // The migrations the schema records, or nullopt when it has none yet.
  std::optional<std::set<int>> recorded_migrations();

  std::string m_schema;
  std::string m_set;  // quoted: where this release's functions are
  Connection m_conn;
  bool m_schema_ready = false;
  Clock::time_point m_acquire_deadline = Clock::time_point::max();
  QueueWait m_wait;
  std::unique_ptr<LeaseWatch> m_watch;  // with options.watch_lease
};

}  // namespace clk::store::postgres
