// ServerStore: each operation is one call of a routine of the lock model
// (see sql/postgres/functions and sql/mariadb/procedures for what each
// guarantees). This file binds requests, reads replies, and decides how
// long each operation keeps trying through server trouble.
#include "store/server/server_store.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "store/gc_pacing.hpp"
#include "store/leftovers_json.hpp"
#include "store/server/expected_rows.hpp"
#include "store/server/json_replies.hpp"
#include "store/server/release_lookup.hpp"
#include "store/server/status_rows.hpp"

namespace clk::store::server {

using namespace std::chrono;

namespace {

// How long each operation keeps trying through server trouble (a full,
// starting, restarting or read-only server, a Galera node cut off): an
// acquire is bounded by its caller (-w, -n: waiting.cpp), the rest here. A
// renewal is short, since clock run's heartbeat retries on its own
// schedule; a release is long, so that a finished job's lease does not stay
// to expire after a failover; leaving the queue and recording a missed run
// come after the caller's deadline, which they must not stretch.
constexpr seconds k_renew_patience{3};
constexpr seconds k_release_patience{30};
constexpr seconds k_after_deadline_patience{1};
constexpr seconds k_command_patience{10};  // status, history, gc, init
// A holder's look at its lease between renewals: short, since the heartbeat
// thread that asks also renews (and the next renewal finds a loss anyway).
constexpr seconds k_check_patience{1};

// A routine's boolean reply: PostgreSQL's text "true", MariaDB's 1.
bool is_true(std::string_view reply) {
  return reply == "true" || reply == "1";
}

std::optional<std::string> prefix_of(const std::optional<lock::Resource>& prefix) {
  if (!prefix)
    return std::nullopt;
  return prefix->str();
}

std::optional<std::int64_t> microseconds_of(const std::optional<lock::Instant>& instant) {
  if (!instant)
    return std::nullopt;
  return duration_cast<microseconds>(instant->time_since_epoch()).count();
}

// Every resource the reply says was lost or not proven: the first one's
// refusal, as renew() words it.
void throw_if_lost(const std::string& reply, const lock::OwnerId& owner) {
  auto lost = parse_renew(reply);
  if (!lost.empty())
    throw refusal_error(Operation::renew, lost.front(), owner);
}

}  // namespace

ServerStore::ServerStore(std::unique_ptr<Session> session) : m_session(std::move(session)) {}

ServerStore::~ServerStore() = default;

void ServerStore::patience(steady_clock::duration patience) {
  m_session->patience_until(steady_clock::now() + patience);
}

void ServerStore::set_acquire_deadline(steady_clock::time_point deadline) {
  m_session->set_acquire_deadline(deadline);
}

Attempt ServerStore::try_acquire(const LockRequest& request, bool queue) {
  m_session->one_acquire_attempt();
  std::optional<std::int64_t> once_per;
  if (request.once_per)
    once_per = request.once_per->count();
  auto holder = holder_trace_json(request.holder);
  if (request.holder && !holder)
    spdlog::debug(
        "this run's trace is not sent: its cgroup's path is not UTF-8, so if it dies "
        "its lease waits for its TTL (docs/dead-holder.md)");
  Args args = {text(request.ns),
               names(request.resources),
               text(std::string(lock::to_string(request.mode))),
               integer(std::int64_t{request.slots}),
               uuid(request.owner),
               integer(std::int64_t{request.ttl.count()}),
               text(request.request_id),
               boolean(queue),
               text(request.info.host),
               text(request.info.ip),
               integer(std::int64_t{request.info.pid}),
               text(request.info.user),
               text(request.info.command),
               instant(request.info.started),
               boolean(request.record_refusal),
               text(request.secret),
               text(describe(Caller{request.info.user, request.info.host, request.info.pid, {}})),
               bigint(once_per),
               json(holder)};
  if (auto margin = m_session->expiry_margin())
    args.push_back(integer(*margin));
  AcquireReply reply;
  try {
    // Sent again after a dropped connection: the request id makes a grant
    // that did take effect come back unchanged instead of re-entering.
    reply = parse_acquire(m_session->call("acquire", "try_acquire", args, Resend::allowed));
  } catch (const HierarchyBusy& busy) {
    return behind_transaction(request, queue, busy);
  }
  if (reply.attempt.outcome == Outcome::blocked)
    m_session->blocked(reply, request.owner);
  if (reply.refused)
    throw refusal_error(Operation::acquire, *reply.refused, request.owner);
  return std::move(reply.attempt);
}

// Another program holds these resources' hierarchy in an open transaction
// past the call's bounded wait: blocked, like any holder (-n: 75, recorded
// here, as the call that would have recorded it was rolled back; a waiter
// tries again soon: that transaction's end may notify nobody).
Attempt ServerStore::behind_transaction(const LockRequest& request, bool queue,
                                        const HierarchyBusy& busy) {
  m_session->blocked_behind_transaction(request.owner);
  Attempt blocked;
  blocked.outcome = Outcome::blocked;
  blocked.behind_transaction =
      std::string(
          "another transaction holds locks under the same top-level name: a session kept "
          "clock's rows of this hierarchy in an open transaction of its own for over ") +
      (queue ? "5s" : "2s") + " (clock's own calls hold them for milliseconds); " +
      busy.where_to_look();
  if (!queue && request.record_refusal)
    record_skip(request, blocked);
  return blocked;
}

// A -n refusal the acquire call could not record: a failure to record it
// changes nothing for the caller, who was not acquired either way (75).
void ServerStore::record_skip(const LockRequest& request, const Attempt& blocked) {
  try {
    record_missed_run(request, EventKind::skipped, in_the_way(blocked));
  } catch (const Error& error) {
    spdlog::warn("could not record the skipped run in history: {}", error.what());
  }
}

void ServerStore::record_missed_run(const LockRequest& request, EventKind kind,
                                    const std::optional<InTheWay>& in_the_way) {
  std::optional<std::string> way;
  if (in_the_way) {
    nlohmann::json object = {{"owner", in_the_way->owner.str()}, {"host", in_the_way->host}};
    object["token"] = in_the_way->token ? nlohmann::json(*in_the_way->token) : nlohmann::json();
    way = object.dump();
  }
  // Never sent twice: a record that did take effect must not be written again.
  patience(k_after_deadline_patience);
  m_session->call(
      "recording a run that did not happen", "record_missed_run",
      {text(std::string(to_string(kind))), text(request.ns), names(request.resources),
       uuid(request.owner), text(std::string(lock::to_string(request.mode))),
       text(request.info.host), text(request.info.ip), integer(std::int64_t{request.info.pid}),
       text(request.info.user), text(request.info.command), json(way), text(request.secret)},
      Resend::if_unsent);
}

void ServerStore::leave_queue(const LockRequest& request) {
  std::optional<std::string> request_id;
  if (!request.request_id.empty())
    request_id = request.request_id;
  patience(k_after_deadline_patience);
  m_session->call("leaving the queue", "leave_queue",
                  {text(request.ns), names(request.resources), uuid(request.owner),
                   text(request_id), text(request.secret)},
                  Resend::allowed);
}

void ServerStore::wait_for_change(steady_clock::time_point until) {
  m_session->wait_for_change(until);
}

void ServerStore::renew(const RenewRequest& request) {
  patience(k_renew_patience);
  throw_if_lost(
      m_session->call("renew", "renew",
                      {text(request.ns), names(request.resources), uuid(request.owner),
                       numbers(request.tokens), integer(std::int64_t{request.ttl.count()}),
                       text(request.secret), text(describe(request.caller))},
                      Resend::allowed),
      request.owner);
}

void ServerStore::note_leftovers(const LeftoversNote& note) {
  const auto& held = note.held;
  patience(k_renew_patience);
  // Writing the same list twice is harmless: sent again after a dropped connection.
  throw_if_lost(m_session->call("recording the leftovers", "note_leftovers",
                                {text(held.ns), names(held.resources), uuid(held.owner),
                                 numbers(held.tokens), json(encode_leftovers(note.leftovers)),
                                 text(held.secret), text(describe(held.caller))},
                                Resend::allowed),
                held.owner);
}

// Within the acquire's own deadline (set_acquire_deadline): these run
// between its attempts.
std::optional<HolderTrace> ServerStore::holder_trace(const std::string& ns,
                                                     const lock::Resource& resource,
                                                     const lock::OwnerId& owner, lock::Token token,
                                                     const std::string& boot_id,
                                                     std::int64_t pid_ns) {
  return parse_holder_trace(m_session->call(
      "reading a holder's process facts", "holder_trace",
      {text(ns), text(resource.str()), uuid(owner), bigint(token), text(boot_id), bigint(pid_ns)},
      Resend::allowed));
}

bool ServerStore::end_dead_lease(const DeadHolderClaim& claim) {
  // Sent again after a dropped connection, an ended lease answers false:
  // the next attempt finds it gone either way.
  return is_true(m_session->call(
      "ending a dead holder's lease", "end_dead_lease",
      {text(claim.ns), text(claim.resource.str()), uuid(claim.owner), bigint(claim.token),
       text(claim.trace.boot_id), bigint(claim.trace.pid_ns), bigint(claim.trace.pid),
       bigint(claim.trace.pid_start), text(holder_died_by(claim.caller))},
      Resend::allowed));
}

std::optional<milliseconds> ServerStore::still_holds_interval() const {
  return m_session->watch_interval();
}

bool ServerStore::still_holds(const RenewRequest& held) {
  if (!m_session->may_have_lost(held.owner))
    return true;
  patience(k_check_patience);
  for (std::size_t i = 0; i < held.resources.size(); ++i) {
    const auto& resource = held.resources[i];
    StatusQuery query;
    query.ns = held.ns;
    query.prefix = resource;
    auto snapshot = read_status(query);
    bool found = std::any_of(snapshot.holders.begin(), snapshot.holders.end(),
                             [&](const lock::Lease& lease) {
                               return lease.resource == resource && lease.owner == held.owner &&
                                      (held.tokens.empty() || lease.token == held.tokens[i]);
                             });
    if (!found)
      return false;
  }
  return true;
}

std::vector<Released> ServerStore::release(const ReleaseRequest& request) {
  steady_clock::duration patience_left = k_release_patience;
  if (request.expires_by) {
    patience_left = std::clamp<steady_clock::duration>(
        *request.expires_by - steady_clock::now(), k_after_deadline_patience, k_release_patience);
  }
  patience(patience_left);
  std::vector<Refused> failures;
  ReleaseReply reply;
  if (request.force) {
    reply = parse_release(m_session->call(
        "forced release", "force_release",
        {text(request.ns), names(request.resources), text(describe(request.caller))},
        Resend::if_unsent));
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

// release2 (35_run_ends.sql in either dialect): the release and how clock
// run's command ended, in one transaction; release where the login may not
// execute release2 yet (its role granted before release2 existed).
std::string ServerStore::call_release(const ReleaseRequest& request) {
  Args args = {text(request.ns),
               names(request.resources),
               uuid(*request.owner),
               text(request.secret),
               text(describe(request.caller)),
               text(request.caller.host),
               numbers(request.caller.lineage),
               boolean(request.succeeded)};
  if (!m_release2_denied) {
    auto with_exit = args;
    with_exit.push_back(int4(request.exit ? request.exit->code : std::nullopt));
    with_exit.push_back(int4(request.exit ? request.exit->signal_if_killed() : std::nullopt));
    try {
      return m_session->call("release", "release2", with_exit, Resend::if_unsent);
    } catch (const NotGranted& refused) {
      spdlog::info(
          "{}; releasing without recording how the run ended (run the roles.sql of this "
          "release again to grant release2)",
          refused.what());
      m_release2_denied = true;
    }
  }
  return m_session->call("release", "release", args, Resend::if_unsent);
}

// Not simply sent again after a lost reply: a second release would undo
// another re-entry. Where the caller says what it holds (tokens, depths),
// the leases are looked up instead (release_lookup.hpp): a release that
// took effect is reported done, one that did not is sent again, until the
// outcome is known or the release's patience runs out.
ReleaseReply ServerStore::release_once(const ReleaseRequest& request) {
  for (;;) {
    try {
      return parse_release(call_release(request));
    } catch (const OutcomeUnknown& unknown) {
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
        spdlog::info("the release of {} had taken effect", request.resources.front().str());
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

Snapshot ServerStore::status(const StatusQuery& query) {
  patience(k_command_patience);
  auto snapshot = read_status(query);
  try {
    snapshot.run_results = parse_run_results(
        m_session->call("reading run results", "run_results",
                        {text(query.ns), text(prefix_of(query.prefix))}, Resend::allowed));
  } catch (const NotGranted& refused) {
    // A login granted before run_results existed: status without them.
    spdlog::debug("no run results: {}", refused.what());
  }
  return snapshot;
}

Snapshot ServerStore::read_status(const StatusQuery& query) {
  StatusRows rows(m_session->instant_format());
  m_session->each_row(
      "status", "status_rows",
      {text(query.ns), text(prefix_of(query.prefix)), boolean(query.include_expired)},
      [&](const RowView& row) { rows.add(row); });
  return rows.take();
}

void ServerStore::expect_runs(const Expectation& expectation) {
  patience(k_check_patience);
  auto declared =
      m_session->call("declaring the expected period", "expect_runs",
                      {text(expectation.ns), names(expectation.resources),
                       integer(std::int64_t{expectation.every.count()}), uuid(expectation.owner),
                       text(expectation.secret), text(describe(expectation.caller))},
                      Resend::allowed);
  if (!is_true(declared)) {
    throw Error(ExitCode::not_owner,
                "only the holder may declare a resource's expected period, and owner " +
                    expectation.owner.str() + " holds no live lease on every resource named");
  }
}

ExpectedRuns ServerStore::expected_runs(const ExpectedQuery& query) {
  patience(k_command_patience);
  ExpectedRows rows;
  m_session->each_row(
      "reading expected runs", "expected_rows",
      {text(query.ns), text(prefix_of(query.prefix)), bigint(microseconds_of(query.since))},
      [&](const RowView& row) { rows.add(row); });
  return rows.take();
}

std::vector<HistoryEvent> ServerStore::history(const HistoryQuery& query) {
  patience(k_command_patience);
  return read_history(query);
}

std::vector<HistoryEvent> ServerStore::read_history(const HistoryQuery& query) {
  std::optional<std::string> event;
  if (query.event)
    event = std::string(to_string(*query.event));
  std::optional<std::int64_t> within_ms;
  if (query.within)
    within_ms = query.within->count();
  try {
    return parse_history(m_session->call(
        "history", "history2",
        {text(query.ns), text(prefix_of(query.prefix)), integer(std::int64_t{query.limit}),
         text(event), bigint(microseconds_of(query.since)), bigint(within_ms), text(query.host)},
        Resend::allowed));
  } catch (const NotGranted& refused) {
    if (query.since || query.within || query.host)
      throw;
    // A login granted before history2 existed: the same events, without
    // their exits.
    spdlog::debug("{}; reading history with history", refused.what());
    return parse_history(m_session->call("history", "history",
                                         {text(query.ns), text(prefix_of(query.prefix)),
                                          integer(std::int64_t{query.limit}), text(event)},
                                         Resend::allowed));
  }
}

// One batch per call (and transaction), paced (gc_pacing.hpp), until a
// batch comes back short.
GcReport ServerStore::gc(const GcOptions& options) {
  BatchPacer pacer(options.batch_size);
  std::optional<std::int64_t> older_than;
  if (options.history_older_than)
    older_than = options.history_older_than->count();
  patience(k_command_patience);
  const auto margin = m_session->expiry_margin();
  GcReport total;
  for (;;) {
    const int batch = pacer.rows();
    patience(k_command_patience);
    Args args = {integer(std::int64_t{batch}), integer(older_than), boolean(options.dry_run)};
    if (margin)
      args.push_back(integer(*margin));
    auto started = steady_clock::now();
    GcReport report = parse_gc(m_session->call("gc", "gc_batch", args, Resend::allowed));
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

MigrationReport ServerStore::migrate() {
  patience(k_command_patience);
  return m_session->migrate();
}

std::optional<milliseconds> ServerStore::idle_limit() const {
  return m_session->idle_limit();
}

void ServerStore::rest() {
  m_session->rest();
}

std::vector<std::string> ServerStore::setup_warnings() {
  return m_session->setup_warnings();
}

std::vector<std::string> ServerStore::retired_routines() {
  patience(k_command_patience);
  return m_session->retired_routines();
}

std::vector<std::string> ServerStore::missing_run_privileges() {
  patience(k_command_patience);
  return m_session->missing_run_privileges();
}

}  // namespace clk::store::server
