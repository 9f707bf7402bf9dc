// See session.hpp.
#include "store/postgres/session.hpp"

#include <algorithm>

#include "store/migration.hpp"
#include "store/migration_report.hpp"
#include "store/postgres/privileges.hpp"
#include "store/postgres/replication.hpp"
#include "store/postgres/routine_sets.hpp"
#include "store/postgres/schema.hpp"
#include "store/postgres/server_log.hpp"

namespace clk::store::postgres {

using namespace std::chrono;
using server::ArgType;

namespace {

// How often a watching holder drains its notifications: a socket read, no
// round trip.
constexpr milliseconds k_watch_interval{200};

const std::string& checked(const std::string& schema) {
  validate_schema_name(schema);
  return schema;
}

// An array literal ({"a","b.c"}, {1,2}); resource names hold no quotes.
template <typename Item, typename Render>
std::string array_literal(const std::vector<Item>& items, Render render) {
  std::string out = "{";
  for (const auto& item : items) {
    if (out.size() > 1)
      out += ',';
    out += render(item);
  }
  return out + "}";
}

// An argument's value as the text parameter libpq sends; nullopt for NULL.
std::optional<std::string> value_text(const server::Arg& arg) {
  struct Render {
    std::optional<std::string> operator()(std::monostate) const { return std::nullopt; }
    std::optional<std::string> operator()(const std::string& value) const { return value; }
    std::optional<std::string> operator()(std::int64_t value) const {
      return std::to_string(value);
    }
    std::optional<std::string> operator()(bool value) const { return value ? "true" : "false"; }
    std::optional<std::string> operator()(const std::vector<std::string>& names) const {
      return array_literal(names, [](const std::string& name) { return "\"" + name + "\""; });
    }
    std::optional<std::string> operator()(const std::vector<std::int64_t>& numbers) const {
      return array_literal(numbers, [](std::int64_t number) { return std::to_string(number); });
    }
  };
  return std::visit(Render{}, arg.value);
}

// Parameter `n` cast to the argument's type: an untyped one takes the
// function's own, so that the function is found by its name and arity.
std::string placeholder(ArgType type, std::size_t n) {
  const std::string p = "$" + std::to_string(n);
  switch (type) {
    case ArgType::text:
    case ArgType::integer:
    case ArgType::boolean:
      return p;
    case ArgType::bigint:
      return p + "::bigint";
    case ArgType::int4:
      return p + "::integer";
    case ArgType::uuid:
      return p + "::uuid";
    case ArgType::names:
      return p + "::text[]";
    case ArgType::numbers:
      return p + "::bigint[]";
    case ArgType::json:
      return p + "::jsonb";
    case ArgType::instant:
      return "'epoch'::timestamptz + " + p + "::bigint * interval '1 microsecond'";
  }
  return p;
}

// "$1, $2::text[], …" for the call, and the parameters it binds.
std::string bind(const server::Args& args, Params& params) {
  std::string list;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (i > 0)
      list += ", ";
    list += placeholder(args[i].type, i + 1);
    params.push_back(value_text(args[i]));
  }
  return list;
}

Retry retry_of(server::Resend resend) {
  return resend == server::Resend::allowed ? Retry::if_broken : Retry::never;
}

}  // namespace

Session::Session(const StoreOptions& options)
    : m_schema(checked(options.pg_schema)),
      m_set(quoted(routine_set(m_schema))),
      m_conn(options.url, options.connect_timeout),
      m_wait(m_conn, notify_channel(m_schema)) {
  if (options.watch_lease)
    m_watch = std::make_unique<LeaseWatch>(options.url, options.connect_timeout,
                                           lost_channel(options.pg_schema));
}

// The first call of a process is its schema check: it goes into this
// binary's set of functions, which exists only where this binary's
// migrations are applied (ready_condition()); where the set or the schema
// is missing the call fails having done nothing, and the schema is migrated
// first and the call made again.
std::string Session::call(std::string_view what, std::string_view routine, const server::Args& args,
                          server::Resend resend) {
  Params params;
  const std::string invocation =
      m_set + "." + std::string(routine) + "(" + bind(args, params) + ")::text";
  if (!m_schema_ready) {
    const std::string ready = ready_condition(m_schema);
    auto reply = m_conn.call_if_exists(
        what,
        ready.empty() ? "SELECT " + invocation
                      : "SELECT CASE WHEN " + ready + " THEN " + invocation + " END",
        params, retry_of(resend));
    if (reply) {
      m_schema_ready = true;
      return std::move(*reply);
    }
    migrate_schema();
  }
  return m_conn.call(what, "SELECT " + invocation, params, retry_of(resend));
}

// A function returning rows returns at least its "now" row, so no rows
// means the schema is out of date.
void Session::each_row(std::string_view what, std::string_view routine, const server::Args& args,
                       const std::function<void(const RowView&)>& visit) {
  Params params;
  const std::string sql =
      "SELECT * FROM " + m_set + "." + std::string(routine) + "(" + bind(args, params) + ")";
  if (!m_schema_ready) {
    const std::string ready = ready_condition(m_schema);
    auto rows = m_conn.each_row(what, ready.empty() ? sql : sql + " WHERE " + ready, params,
                                Retry::if_broken, visit);
    if (rows && *rows > 0) {
      m_schema_ready = true;
      return;
    }
    migrate_schema();
  }
  if (!m_conn.each_row(what, sql, params, Retry::if_broken, visit)) {
    throw Error(ExitCode::config, "the clock schema is missing or incomplete (no function " +
                                      std::string(routine) + "): run 'clock init'");
  }
}

void Session::patience_until(Clock::time_point until) {
  m_conn.set_deadline(until, until);
}

void Session::set_acquire_deadline(Clock::time_point deadline) {
  m_acquire_deadline = deadline;
}

// The attempt that comes at the deadline (every wait ends with one) gets a
// second more: -w D then ends within a second of D whatever the server does.
void Session::one_acquire_attempt() {
  auto now = Clock::now();
  m_conn.set_deadline(now, std::max(m_acquire_deadline, now + seconds(1)));
}

void Session::blocked(const AcquireReply& reply, const lock::OwnerId& owner) {
  std::optional<Clock::time_point> next_expiry;
  if (reply.next_expiry_in)
    next_expiry = Clock::now() + *reply.next_expiry_in + milliseconds(20);
  std::optional<std::int64_t> front;
  if (!reply.attempt.blocking_waiters.empty())
    front = reply.attempt.blocking_waiters.front().position;
  m_wait.blocked_until(next_expiry, owner.str(), reply.ahead, reply.mine, front);
}

// That transaction's end may notify nobody: look again soon.
void Session::blocked_behind_transaction(const lock::OwnerId& owner) {
  m_wait.blocked_until(Clock::now() + milliseconds(500), owner.str(), std::nullopt, std::nullopt,
                       std::nullopt);
}

void Session::wait_for_change(Clock::time_point until) {
  m_wait.wait_for_change(until);
}

bool Session::may_have_lost(const lock::OwnerId& owner) {
  return !m_watch || m_watch->may_have_lost(owner.str());
}

std::optional<milliseconds> Session::watch_interval() const {
  if (!m_watch)
    return std::nullopt;
  return k_watch_interval;
}

void Session::migrate_schema() {
  m_conn.run_migrations(migration_script(m_schema));
  m_schema_ready = true;
}

std::optional<std::set<int>> Session::recorded_migrations() {
  std::set<int> versions;
  auto rows = m_conn.each_row(
      "read the schema's migrations",
      "SELECT version::text FROM " + quoted(m_schema) + ".schema_migrations", {}, Retry::if_broken,
      [&](const RowView& row) { versions.insert(std::stoi(row.at(0))); });
  if (!rows)
    return std::nullopt;
  return versions;
}

// clock init: migrates, then drops the sets of releases no host may still
// run (routine_sets.hpp).
MigrationReport Session::migrate() {
  auto before = recorded_migrations();
  migrate_schema();
  m_conn.run_migrations(retire_script(m_schema));
  auto after = recorded_migrations().value_or(std::set<int>{});
  return migration_report(before, after, sql::postgres_migrations());
}

// A holder's connection between renewals: closed once idle for k_idle.
void Session::rest() {
  m_conn.close_if_idle(k_idle);
}

std::vector<std::string> Session::setup_warnings() {
  std::vector<std::string> warnings;
  if (auto warning = asynchronous_standby_warning(m_conn))
    warnings.push_back(std::move(*warning));
  if (auto warning = secrets_in_server_log_warning(m_conn))
    warnings.push_back(std::move(*warning));
  for (auto& warning : retired_routines())
    warnings.push_back(std::move(warning));
  return warnings;
}

std::vector<std::string> Session::retired_routines() {
  if (auto warning = retired_sets_warning(m_conn, m_schema))
    return {std::move(*warning)};
  return {};
}

std::vector<std::string> Session::missing_run_privileges() {
  return postgres::missing_run_privileges(m_conn, routine_set(m_schema));
}

}  // namespace clk::store::postgres
