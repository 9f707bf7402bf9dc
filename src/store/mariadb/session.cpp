// See session.hpp.
#include "store/mariadb/session.hpp"

#include <algorithm>
#include <thread>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "store/mariadb/privileges.hpp"
#include "store/mariadb/routine_sets.hpp"
#include "store/mariadb/rows.hpp"
#include "store/mariadb/schema.hpp"
#include "store/mariadb/server_log.hpp"

namespace clk::store::mariadb {

using namespace std::chrono;

namespace {

// An argument as MariaDB binds it: integers as integers, booleans as 0 or
// 1, lists as JSON arrays (the procedures read them with JSON_TABLE).
Param bound(const server::Arg& arg) {
  struct Bind {
    Param operator()(std::monostate) const { return std::monostate{}; }
    Param operator()(const std::string& value) const { return value; }
    Param operator()(std::int64_t value) const { return value; }
    Param operator()(bool value) const { return std::int64_t{value ? 1 : 0}; }
    Param operator()(const std::vector<std::string>& names) const {
      return nlohmann::json(names).dump();
    }
    Param operator()(const std::vector<std::int64_t>& numbers) const {
      return nlohmann::json(numbers).dump();
    }
  };
  return std::visit(Bind{}, arg.value);
}

// "CALL clock_x_rXXXXXXXX(?, ?, …)" with one placeholder per argument.
std::string call_sql(std::string_view routine, std::size_t arity) {
  std::string sql = "CALL clock_" + std::string(routine) + set_suffix() + "(";
  for (std::size_t i = 0; i < arity; ++i)
    sql += i == 0 ? "?" : ", ?";
  return sql + ")";
}

ConnectOptions connect_options(const StoreOptions& options) {
  ConnectOptions out;
  out.url = parse_mariadb_url(options.url);
  if (options.connect_timeout > 0ms)
    out.connect_timeout = std::max(1s, ceil<seconds>(options.connect_timeout));
  return out;
}

// A login whose role was granted before roles.sql named a newer procedure
// may not execute it: error 1370.
constexpr unsigned k_not_granted = 1370;
// CALL of a procedure that does not exist.
constexpr unsigned k_no_such_procedure = 1305;

}  // namespace

Session::Session(const StoreOptions& options)
    : m_options(connect_options(options)),
      m_connection(m_options),
      m_galera_max_skew(options.galera_max_skew) {}

std::vector<Row> Session::call_rows(std::string_view what, std::string_view routine,
                                    const server::Args& args, Resend resend) {
  first_use();
  Params params;
  params.reserve(args.size());
  for (const auto& arg : args)
    params.push_back(bound(arg));
  try {
    auto rows = m_connection.call(what, call_sql(routine, args.size()), params, resend);
    m_last_call = Clock::now();
    m_procedures_seen = true;
    return rows;
  } catch (const ServerTrouble& trouble) {
    const bool missing =
        trouble.number() == k_no_such_procedure || trouble.number() == k_not_granted;
    // The first call is the check that this release's procedures are
    // installed (first_look() asks only for the migrations): a call of a
    // missing one did nothing, so after the migration it is made again.
    if (missing && !m_procedures_seen && !procedures_installed(m_connection)) {
      mariadb::migrate(m_connection, OldSets::keep);
      m_procedures_seen = true;
      return call_rows(what, routine, args, resend);
    }
    if (trouble.number() == k_not_granted)
      throw server::NotGranted(trouble.what());
    throw;
  }
}

std::string Session::call(std::string_view what, std::string_view routine, const server::Args& args,
                          server::Resend resend) {
  return single_value("clock_" + std::string(routine), call_rows(what, routine, args, resend));
}

void Session::each_row(std::string_view what, std::string_view routine, const server::Args& args,
                       const std::function<void(const RowView&)>& visit) {
  for (const auto& row : call_rows(what, routine, args, Resend::allowed))
    visit(RowText(row));
}

void Session::patience_until(Clock::time_point until) {
  m_connection.set_deadline(until);
}

void Session::set_acquire_deadline(Clock::time_point deadline) {
  m_acquire_deadline = deadline;
}

void Session::one_acquire_attempt() {
  patience_until(std::max(m_acquire_deadline, Clock::now() + seconds(1)));
}

std::optional<std::int64_t> Session::expiry_margin() {
  first_use();  // on a Galera node, it measures the margin
  refuse_if_ahead();
  return m_margin.count();
}

void Session::blocked(const AcquireReply& reply, const lock::OwnerId&) {
  m_pace.blocked(reply.attempt, reply.mine, reply.next_expiry_in);
}

// MariaDB's routines wait out a row lock within innodb_lock_wait_timeout
// and answer 1205, which the connection sends again: never thrown here.
void Session::blocked_behind_transaction(const lock::OwnerId&) {}

// MariaDB notifies nobody: a waiter looks again at the pace of
// waiting_pace.hpp (the first waiter every 25-30 ms) and, between looks,
// holds no connection.
void Session::wait_for_change(Clock::time_point until) {
  auto now = Clock::now();
  if (until <= now)
    return;
  auto sleep = std::min<Clock::duration>(until - now, m_pace.next_look(now));
  if (sleep >= k_idle)
    m_connection.close();
  std::this_thread::sleep_for(sleep);
}

MigrationReport Session::migrate() {
  auto report = mariadb::migrate(m_connection, OldSets::retire);
  m_checked = true;
  m_connection.close();  // borrowed, not held (man clock, COMMANDS)
  return report;
}

void Session::rest() {
  if (m_connection.is_open() && Clock::now() - m_last_call >= k_idle)
    m_connection.close();
}

std::vector<std::string> Session::setup_warnings() {
  try {
    patience_until(Clock::now() + seconds(1));
    first_use();
  } catch (const std::exception&) {
    return {};  // the command itself says what is wrong
  }
  std::vector<std::string> warnings;
  if (m_skew && m_skew->refusal)
    warnings.push_back(*m_skew->refusal);
  else if (m_skew && m_skew->warning)
    warnings.push_back(*m_skew->warning);
  if (auto warning = secrets_in_server_log_warning(m_connection))
    warnings.push_back(std::move(*warning));
  for (auto& warning : retired_routines())
    warnings.push_back(std::move(warning));
  return warnings;
}

// A second's patience: clock check and status -v ask it beside their work.
std::vector<std::string> Session::retired_routines() {
  patience_until(Clock::now() + seconds(1));
  if (auto warning = retired_sets_warning(m_connection))
    return {std::move(*warning)};
  return {};
}

std::vector<std::string> Session::missing_run_privileges() {
  first_use();
  return mariadb::missing_run_privileges(m_connection);
}

// Migrates on the first operation of a process when the database is not
// current (no schema yet, a migration or the procedures of a newer clock
// missing), as on PostgreSQL.
void Session::first_use() {
  if (m_checked)
    return;
  auto look = first_look(m_connection);
  if (!look.current)
    mariadb::migrate(m_connection, OldSets::keep);
  if (look.galera)
    judge_node_clocks();
  m_checked = true;
}

// A Galera node: its clock, read on the session's connection, against the
// other nodes' of the URL, read on connections of their own
// (node_clocks.hpp), which gives the margin that grants and gc add to an
// expiry. Skew above k_skew_warning is logged.
void Session::judge_node_clocks() {
  const MariadbHost used = m_connection.host();
  std::vector<MariadbHost> others;
  for (const auto& host : m_options.url.hosts) {
    if (host.label() != used.label())
      others.push_back(host);
  }
  m_skew = judge_skew(read_node_clock(m_connection), read_node_clocks(m_options, others),
                      m_galera_max_skew);
  m_margin = ceil<milliseconds>(m_skew->expiry_margin);
  if (m_skew->warning && m_skew->furthest && !m_skew->refusal)
    spdlog::warn("{}", *m_skew->warning);
  else if (m_skew->warning)
    spdlog::info("{}", *m_skew->warning);
}

void Session::refuse_if_ahead() const {
  if (m_skew && m_skew->refusal)
    throw Error(ExitCode::config, *m_skew->refusal);
}

}  // namespace clk::store::mariadb
