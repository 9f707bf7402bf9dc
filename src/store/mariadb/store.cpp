// MariadbStore: each operation is one CALL of a procedure of
// sql/mariadb/procedures (see there for what each guarantees), with
// PostgreSQL's parameters in PostgreSQL's order and its JSON replies, read
// by the same code (store/json_replies.hpp, status_rows.hpp,
// expected_rows.hpp). This file binds requests, reads replies, paces the
// waiters that MariaDB cannot notify (waiting_pace.hpp) and migrates on a
// process's first use.
#include "store/mariadb/store.hpp"

#include <algorithm>
#include <thread>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "store/dead_holder.hpp"
#include "store/gc_pacing.hpp"
#include "store/leftovers_json.hpp"
#include "store/mariadb/connection.hpp"
#include "store/mariadb/node_clocks.hpp"
#include "store/mariadb/privileges.hpp"
#include "store/mariadb/routine_sets.hpp"
#include "store/mariadb/rows.hpp"
#include "store/mariadb/schema.hpp"
#include "store/mariadb/server_log.hpp"
#include "store/mariadb/waiting_pace.hpp"
#include "store/server/expected_rows.hpp"
#include "store/server/json_replies.hpp"
#include "store/server/release_lookup.hpp"
#include "store/server/status_rows.hpp"

namespace clk::store {

namespace {

using namespace std::chrono;
namespace db = mariadb;

// How long each operation keeps trying through server trouble, as on
// PostgreSQL (store/postgres/store.cpp): an acquire until its caller's
// deadline, a renewal briefly (the heartbeat retries on its own schedule), a
// release long (a finished job's lease should not stay to expire), what
// follows the caller's deadline a second.
constexpr seconds k_renew_patience{3};
constexpr seconds k_release_patience{30};
constexpr seconds k_after_deadline_patience{1};
constexpr seconds k_command_patience{10};  // status, history, gc, init
constexpr seconds k_check_patience{1};
// A holder's connection is closed once idle this long (man clock, COMMANDS).
constexpr milliseconds k_idle{1000};

class MariadbStore : public Store, public DeadHolders {
 public:
  explicit MariadbStore(const StoreOptions& options)
      : m_options(connect_options(options)),
        m_connection(m_options),
        m_galera_max_skew(options.galera_max_skew) {}

  Attempt try_acquire(const LockRequest& request, bool queue) override {
    // One attempt, by the caller's deadline (and at least a second, so that
    // the attempt at the deadline that ends every wait gets an answer). The
    // request id makes an attempt sent twice a single grant.
    auto now = steady_clock::now();
    patience_until(std::max(m_acquire_deadline, now + seconds(1)));
    first_use();  // on a Galera node, it measures the expiry margin
    refuse_if_ahead();
    std::optional<std::int64_t> once_per;
    if (request.once_per)
      once_per = request.once_per->count();
    auto reply = parse_acquire(call(
        "acquire", "clock_try_acquire", 19,
        {request.ns, db::json_array(request.resources), std::string(lock::to_string(request.mode)),
         std::int64_t{request.slots}, request.owner.str(), std::int64_t{request.ttl.count()},
         request.request_id, db::boolean(queue), request.info.host, request.info.ip,
         std::int64_t{request.info.pid}, request.info.user, request.info.command,
         db::microseconds_or_null(request.info.started), db::boolean(request.record_refusal),
         request.secret,
         describe(Caller{request.info.user, request.info.host, request.info.pid, {}}),
         once_per ? db::Param(*once_per) : db::Param(std::monostate{}), margin_ms()}));
    if (reply.attempt.outcome == Outcome::blocked)
      m_pace.blocked(reply.attempt, reply.next_expiry_in);
    if (reply.refused)
      throw refusal_error(Operation::acquire, *reply.refused, request.owner);
    return std::move(reply.attempt);
  }

  void set_acquire_deadline(steady_clock::time_point deadline) override {
    m_acquire_deadline = deadline;
  }

  void leave_queue(const LockRequest& request) override {
    std::optional<std::string> request_id;
    if (!request.request_id.empty())
      request_id = request.request_id;
    patience(k_after_deadline_patience);
    call("leaving the queue", "clock_leave_queue", 5,
         {request.ns, db::json_array(request.resources), request.owner.str(),
          db::text_or_null(request_id), request.secret});
  }

  void record_missed_run(const LockRequest& request, EventKind kind,
                         const std::optional<InTheWay>& in_the_way) override {
    std::optional<std::string> way;
    if (in_the_way) {
      nlohmann::json object = {{"owner", in_the_way->owner.str()}, {"host", in_the_way->host}};
      object["token"] = in_the_way->token ? nlohmann::json(*in_the_way->token) : nlohmann::json();
      way = object.dump();
    }
    // Never sent twice: a record that did take effect must not be written again.
    patience(k_after_deadline_patience);
    call("recording a run that did not happen", "clock_record_missed_run", 12,
         {std::string(to_string(kind)), request.ns, db::json_array(request.resources),
          request.owner.str(), std::string(lock::to_string(request.mode)), request.info.host,
          request.info.ip, std::int64_t{request.info.pid}, request.info.user, request.info.command,
          db::text_or_null(way), request.secret},
         db::Resend::if_unsent);
  }

  // MariaDB notifies nobody: a waiter looks again at the pace of
  // waiting_pace.hpp (the first waiter every 25-30 ms) and, between looks,
  // holds no connection.
  void wait_for_change(steady_clock::time_point until) override {
    auto now = steady_clock::now();
    if (until <= now)
      return;
    auto sleep = std::min<steady_clock::duration>(until - now, m_pace.next_look(now));
    if (sleep >= k_idle)
      m_connection.close();
    std::this_thread::sleep_for(sleep);
  }

  void renew(const RenewRequest& request) override {
    patience(k_renew_patience);
    auto lost =
        parse_renew(call("renew", "clock_renew", 7,
                         {request.ns, db::json_array(request.resources), request.owner.str(),
                          db::json_array(request.tokens), std::int64_t{request.ttl.count()},
                          request.secret, describe(request.caller)}));
    if (!lost.empty())
      throw refusal_error(Operation::renew, lost.front(), request.owner);
  }

  // A round trip, as on PostgreSQL without --watch-lease: no interval, so a
  // holder learns of a loss at its next renewal.
  bool still_holds(const RenewRequest& held) override {
    patience(k_check_patience);
    for (std::size_t i = 0; i < held.resources.size(); ++i) {
      StatusQuery query;
      query.ns = held.ns;
      query.prefix = held.resources[i];
      auto snapshot = read_status(query);
      bool found = std::any_of(
          snapshot.holders.begin(), snapshot.holders.end(), [&](const lock::Lease& lease) {
            return lease.resource == held.resources[i] && lease.owner == held.owner &&
                   (held.tokens.empty() || lease.token == held.tokens[i]);
          });
      if (!found)
        return false;
    }
    return true;
  }
  std::optional<milliseconds> still_holds_interval() const override { return std::nullopt; }

  void note_leftovers(const LeftoversNote& note) override {
    const auto& held = note.held;
    patience(k_renew_patience);
    // Writing the same list twice is harmless: sent again after a dropped connection.
    auto lost = parse_renew(call(
        "recording the leftovers", "clock_note_leftovers", 7,
        {held.ns, db::json_array(held.resources), held.owner.str(), db::json_array(held.tokens),
         encode_leftovers(note.leftovers), held.secret, describe(held.caller)}));
    if (!lost.empty())
      throw refusal_error(Operation::renew, lost.front(), held.owner);
  }

  void note_holder(const RenewRequest& held, const HolderTrace& trace) override {
    patience(k_renew_patience);
    // Writing the same trace twice is harmless: sent again after a dropped connection.
    auto lost = parse_renew(call(
        "recording this holder's process facts", "clock_note_holder", 12,
        {held.ns, db::json_array(held.resources), held.owner.str(), db::json_array(held.tokens),
         trace.boot_id, std::to_string(trace.pid_ns), std::to_string(trace.pid),
         std::to_string(trace.pid_start), std::to_string(trace.job_group), trace.job_cgroup,
         held.secret, describe(held.caller)}));
    if (!lost.empty())
      throw refusal_error(Operation::renew, lost.front(), held.owner);
  }

  // Within the acquire's own deadline: these run between its attempts.
  std::optional<HolderTrace> holder_trace(const std::string& ns, const lock::Resource& resource,
                                          const lock::OwnerId& owner, lock::Token token,
                                          const std::string& boot_id,
                                          std::int64_t pid_ns) override {
    return parse_holder_trace(call(
        "reading a holder's process facts", "clock_holder_trace", 6,
        {ns, resource.str(), owner.str(), std::to_string(token), boot_id, std::to_string(pid_ns)}));
  }

  bool end_dead_lease(const DeadHolderClaim& claim) override {
    // Sent again after a dropped connection, an ended lease answers 0: the
    // next attempt finds it gone either way.
    return call("ending a dead holder's lease", "clock_end_dead_lease", 9,
                {claim.ns, claim.resource.str(), claim.owner.str(), std::to_string(claim.token),
                 claim.trace.boot_id, std::to_string(claim.trace.pid_ns),
                 std::to_string(claim.trace.pid), std::to_string(claim.trace.pid_start),
                 holder_died_by(claim.caller)}) == "1";
  }

  std::vector<Released> release(const ReleaseRequest& request) override {
    steady_clock::duration patience_left = k_release_patience;
    if (request.expires_by) {
      patience_left = std::clamp<steady_clock::duration>(
          *request.expires_by - steady_clock::now(), k_after_deadline_patience, k_release_patience);
    }
    patience(patience_left);
    std::vector<Refused> failures;
    ReleaseReply reply;
    if (request.force) {
      reply = parse_release(
          call("forced release", "clock_force_release", 3,
               {request.ns, db::json_array(request.resources), describe(request.caller)},
               db::Resend::if_unsent));
      std::erase_if(reply.released, [&](const Released& released) {
        if (released.holders_removed > 0)
          return false;
        failures.push_back({Refusal::nobody_holds, released.resource});
        return true;
      });
    } else {
      if (!request.owner)
        throw Error(ExitCode::usage, "release needs the owner id: --owner or CLOCK_OWNER");
      reply = release_once(request);
      failures = std::move(reply.refused);
    }
    if (!failures.empty())
      throw refusal_error(Operation::release, failures.front(), request.owner);
    return std::move(reply.released);
  }

  void expect_runs(const Expectation& expectation) override {
    patience(k_check_patience);
    auto declared = call("declaring the expected period", "clock_expect_runs", 6,
                         {expectation.ns, db::json_array(expectation.resources),
                          std::int64_t{expectation.every.count()}, expectation.owner.str(),
                          expectation.secret, describe(expectation.caller)});
    if (declared != "1") {
      throw Error(ExitCode::not_owner,
                  "only the holder may declare a resource's expected period, and owner " +
                      expectation.owner.str() + " holds no live lease on every resource named");
    }
  }

  ExpectedRuns expected_runs(const ExpectedQuery& query) override {
    patience(k_command_patience);
    std::optional<std::string> prefix;
    if (query.prefix)
      prefix = query.prefix->str();
    db::Param since = std::monostate{};
    if (query.since)
      since = db::microseconds_or_null(*query.since);
    ExpectedRows rows;
    for (const auto& row : call_rows("reading expected runs", "clock_expected_rows", 3,
                                     {db::text_or_null(query.ns), db::text_or_null(prefix), since}))
      rows.add(db::RowText(row));
    return rows.take();
  }

  Snapshot status(const StatusQuery& query) override {
    patience(k_command_patience);
    auto snapshot = read_status(query);
    std::optional<std::string> prefix;
    if (query.prefix)
      prefix = query.prefix->str();
    try {
      snapshot.run_results =
          parse_run_results(call("reading run results", "clock_run_results", 2,
                                 {db::text_or_null(query.ns), db::text_or_null(prefix)}));
    } catch (const db::ServerTrouble& trouble) {
      if (!not_granted(trouble))
        throw;
      spdlog::debug("no run results: {}", trouble.what());
    }
    return snapshot;
  }

  std::vector<HistoryEvent> history(const HistoryQuery& query) override {
    patience(k_command_patience);
    return read_history(query);
  }

  // One batch per call (and transaction), paced (gc_pacing.hpp), until a
  // batch comes back short.
  GcReport gc(const GcOptions& options) override {
    BatchPacer pacer(options.batch_size);
    db::Param older_than = std::monostate{};
    if (options.history_older_than)
      older_than = std::int64_t{options.history_older_than->count()};
    GcReport total;
    patience(k_command_patience);
    first_use();
    refuse_if_ahead();
    for (;;) {
      const int batch = pacer.rows();
      patience(k_command_patience);
      auto started = steady_clock::now();
      GcReport report = parse_gc(
          call("gc", "clock_gc_batch", 4,
               {std::int64_t{batch}, older_than, db::boolean(options.dry_run), margin_ms()}));
      pacer.took(steady_clock::now() - started);
      total.expired_leases += report.expired_leases;
      total.dead_waiters += report.dead_waiters;
      total.history_rows += report.history_rows;
      total.idle_counters += report.idle_counters;
      bool short_batch = report.expired_leases < batch && report.dead_waiters < batch &&
                         report.history_rows < batch && report.idle_counters < batch;
      if (options.dry_run || short_batch)
        return total;
    }
  }

  MigrationReport migrate() override {
    patience(k_command_patience);
    auto report = db::migrate(m_connection, db::OldSets::retire);
    m_checked = true;
    m_connection.close();  // borrowed, not held (man clock, COMMANDS)
    return report;
  }

  std::optional<milliseconds> idle_limit() const override { return k_idle; }

  void rest() override {
    if (m_connection.is_open() && steady_clock::now() - m_last_call >= k_idle)
      m_connection.close();
  }

  // On a Galera node: how far its clock is from the other nodes', when
  // that is more than k_skew_warning or cannot be measured. A node refused
  // for its skew is said here too; the operation itself exits 78. And
  // whether the server's general or slow log keeps owner secrets.
  std::vector<std::string> setup_warnings() override {
    try {
      patience(k_check_patience);
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

  std::vector<std::string> retired_routines() override {
    patience(k_check_patience);
    if (auto warning = db::retired_sets_warning(m_connection))
      return {std::move(*warning)};
    return {};
  }

  std::vector<std::string> missing_run_privileges() override {
    patience(k_command_patience);
    first_use();
    return db::missing_run_privileges(m_connection);
  }

 private:
  void patience(steady_clock::duration patience) { patience_until(steady_clock::now() + patience); }
  void patience_until(steady_clock::time_point until) { m_connection.set_deadline(until); }

  // "CALL clock_x(?, ?, …)" with `arity` placeholders.
  static std::string call_sql(std::string_view procedure, int arity) {
    std::string sql = "CALL " + std::string(procedure) + db::set_suffix() + "(";
    for (int i = 0; i < arity; ++i)
      sql += i == 0 ? "?" : ", ?";
    return sql + ")";
  }

  // Every row of the procedure's first result, after the first use's
  // migration.
  std::vector<db::Row> call_rows(std::string_view what, std::string_view procedure, int arity,
                                 const db::Params& params,
                                 db::Resend resend = db::Resend::allowed) {
    first_use();
    auto rows = m_connection.call(what, call_sql(procedure, arity), params, resend);
    m_last_call = steady_clock::now();
    return rows;
  }

  // The one value a procedure replies with (its JSON, a count, a boolean).
  std::string call(std::string_view what, std::string_view procedure, int arity,
                   const db::Params& params, db::Resend resend = db::Resend::allowed) {
    return db::single_value(procedure, call_rows(what, procedure, arity, params, resend));
  }

  Snapshot read_status(const StatusQuery& query) {
    std::optional<std::string> prefix;
    if (query.prefix)
      prefix = query.prefix->str();
    StatusRows rows(InstantFormat::epoch_microseconds);
    for (const auto& row : call_rows("status", "clock_status_rows", 3,
                                     {db::text_or_null(query.ns), db::text_or_null(prefix),
                                      db::boolean(query.include_expired)}))
      rows.add(db::RowText(row));
    return rows.take();
  }

  std::vector<HistoryEvent> read_history(const HistoryQuery& query) {
    std::optional<std::string> prefix;
    if (query.prefix)
      prefix = query.prefix->str();
    std::optional<std::string> event;
    if (query.event)
      event = std::string(to_string(*query.event));
    db::Param since_us = std::monostate{};
    if (query.since)
      since_us = std::int64_t{
          std::chrono::duration_cast<std::chrono::microseconds>(query.since->time_since_epoch())
              .count()};
    db::Param within_ms = std::monostate{};
    if (query.within)
      within_ms = std::int64_t{query.within->count()};
    try {
      return parse_history(
          call("history", "clock_history2", 7,
               {db::text_or_null(query.ns), db::text_or_null(prefix), std::int64_t{query.limit},
                db::text_or_null(event), since_us, within_ms, db::text_or_null(query.host)}));
    } catch (const db::ServerTrouble& trouble) {
      if (!not_granted(trouble) || query.since || query.within || query.host)
        throw;
      // A role granted before clock_history2: the same events, without
      // their exits.
      spdlog::debug("{}; reading history with clock_history", trouble.what());
      return parse_history(call("history", "clock_history", 4,
                                {db::text_or_null(query.ns), db::text_or_null(prefix),
                                 std::int64_t{query.limit}, db::text_or_null(event)}));
    }
  }

  // A login whose role was granted before roles.sql named a newer procedure
  // (clock_release2, clock_run_results) may not execute it: error 1370.
  // The call falls back to what that role may do, and says so under -v.
  static bool not_granted(const db::ServerTrouble& trouble) { return trouble.number() == 1370; }

  // clock_release2 (sql/mariadb/procedures/35_run_ends.sql): the release
  // and how clock run's command ended; clock_release where the login may
  // not execute it yet.
  std::string call_release(const ReleaseRequest& request) {
    db::Params params = {request.ns,
                         db::json_array(request.resources),
                         request.owner->str(),
                         request.secret,
                         describe(request.caller),
                         request.caller.host,
                         db::json_array(request.caller.lineage),
                         db::boolean(request.succeeded)};
    if (!m_release2_denied) {
      db::Param exit_code = std::monostate{};
      db::Param exit_signal = std::monostate{};
      if (request.exit && request.exit->code)
        exit_code = std::int64_t{*request.exit->code};
      else if (request.exit)
        exit_signal = std::int64_t{request.exit->signal};
      auto with_exit = params;
      with_exit.push_back(exit_code);
      with_exit.push_back(exit_signal);
      try {
        return call("release", "clock_release2", 10, with_exit, db::Resend::if_unsent);
      } catch (const db::ServerTrouble& trouble) {
        if (!not_granted(trouble))
          throw;
        spdlog::info(
            "{}; releasing without recording how the run ended (run sql/mariadb/roles.sql "
            "again to grant clock_release2)",
            trouble.what());
        m_release2_denied = true;
      }
    }
    return call("release", "clock_release", 8, params, db::Resend::if_unsent);
  }

  // Not simply sent again after a lost reply: a second release would undo
  // another re-entry. Where the caller says what it holds (tokens, depths),
  // the leases are looked up instead (release_lookup.hpp): a release that
  // took effect is reported done, one that did not is sent again, until the
  // outcome is known or the release's patience runs out.
  ReleaseReply release_once(const ReleaseRequest& request) {
    for (;;) {
      try {
        return parse_release(call_release(request));
      } catch (const db::OutcomeUnknown& unknown) {
        const bool knows_lease = request.tokens.size() == request.resources.size() &&
                                 request.depths.size() == request.resources.size();
        if (!knows_lease)
          throw;
        spdlog::info("{}; looking it up", unknown.what());
        std::optional<bool> done;
        try {
          done = release_took_effect(
              request, [this](const StatusQuery& query) { return read_status(query); },
              [this](const HistoryQuery& query) { return read_history(query); });
        } catch (const Error& error) {
          throw Error(ExitCode::unavailable,
                      std::string(unknown.what()) + "; and looking it up failed: " + error.what());
        }
        if (!done)
          throw;
        if (*done) {
          ReleaseReply reply;
          for (std::size_t i = 0; i < request.resources.size(); ++i)
            reply.released.push_back({request.resources[i], request.depths[i] - 1, 0});
          return reply;
        }
        spdlog::info("the release of {} had not taken effect; sending it again",
                     request.resources.front().str());
      }
    }
  }

  // Migrates on the first operation of a process when the database is not
  // current (no schema yet, a migration or the procedures of a newer clock
  // missing), as the PostgreSQL store does.
  void first_use() {
    if (m_checked)
      return;
    auto look = db::first_look(m_connection);
    if (!look.current)
      db::migrate(m_connection, db::OldSets::keep);
    if (look.galera)
      judge_node_clocks();
    m_checked = true;
  }

  // A Galera node: its clock, read on the store's connection, against the
  // other nodes' of the URL, read on connections of their own
  // (node_clocks.hpp), which gives the margin that
  // grants and gc add to an expiry. Skew above k_skew_warning is logged.
  void judge_node_clocks() {
    const MariadbHost used = m_connection.host();
    std::vector<MariadbHost> others;
    for (const auto& host : m_options.url.hosts) {
      if (host.label() != used.label())
        others.push_back(host);
    }
    m_skew = db::judge_skew(db::read_node_clock(m_connection),
                            db::read_node_clocks(m_options, others), m_galera_max_skew);
    m_margin = ceil<milliseconds>(m_skew->expiry_margin);
    if (m_skew->warning && m_skew->furthest && !m_skew->refusal)
      spdlog::warn("{}", *m_skew->warning);
    else if (m_skew->warning)
      spdlog::info("{}", *m_skew->warning);
  }

  // A node whose clock runs ahead of another's by certainly more than
  // mariadb.galera_max_skew would see leases expire early: it grants
  // nothing and removes nothing (78). Reads, renewals and releases go on.
  void refuse_if_ahead() const {
    if (m_skew && m_skew->refusal)
      throw Error(ExitCode::config, *m_skew->refusal);
  }

  // What clock_try_acquire and clock_gc_batch add to an expiry (0 off Galera).
  std::int64_t margin_ms() const { return m_margin.count(); }

  static db::ConnectOptions connect_options(const StoreOptions& options) {
    db::ConnectOptions out;
    out.url = parse_mariadb_url(options.url);
    if (options.connect_timeout > 0ms) {
      out.connect_timeout =
          std::max(1s, std::chrono::ceil<std::chrono::seconds>(options.connect_timeout));
    }
    return out;
  }

  db::ConnectOptions m_options;
  db::Connection m_connection;
  milliseconds m_galera_max_skew;
  std::optional<db::SkewVerdict> m_skew;  // measured on a Galera node
  milliseconds m_margin{0};
  bool m_checked = false;
  bool m_release2_denied = false;  // this login may not execute clock_release2
  steady_clock::time_point m_acquire_deadline = steady_clock::time_point::max();
  steady_clock::time_point m_last_call{};
  db::WaitingPace m_pace;
};

}  // namespace

std::unique_ptr<Store> make_mariadb_store(const StoreOptions& options) {
  return std::make_unique<MariadbStore>(options);
}

std::string mariadb_schema_sql() {
  return db::print_sql();
}

}  // namespace clk::store
