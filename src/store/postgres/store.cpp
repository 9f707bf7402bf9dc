// PostgresStore: each operation is one call of a SQL function of
// sql/postgres (see there for what each guarantees). This file turns requests
// into bound parameters and replies into results and errors, and creates or
// migrates the schema on first use.
#include "store/postgres/store.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "error.hpp"
#include "store/gc_pacing.hpp"
#include "store/leftovers_json.hpp"
#include "store/migration.hpp"
#include "store/migration_report.hpp"
#include "store/postgres/connection.hpp"
#include "store/postgres/privileges.hpp"
#include "store/postgres/replication.hpp"
#include "store/postgres/routine_sets.hpp"
#include "store/postgres/schema.hpp"
#include "store/postgres/server_log.hpp"
#include "store/server/expected_rows.hpp"
#include "store/server/json_replies.hpp"
#include "store/server/release_lookup.hpp"
#include "store/server/status_rows.hpp"
#include "util/random_seed.hpp"

namespace clk::store {

using namespace std::chrono;
namespace pg = postgres;

namespace {

// A text[] literal of resource names ({"a","b.c"}); names hold no quotes.
std::string text_array(const std::vector<lock::Resource>& resources) {
  std::string out = "{";
  for (const auto& resource : resources) {
    out += (out.size() > 1 ? ",\"" : "\"") + resource.str() + "\"";
  }
  return out + "}";
}

std::string bigint_array(const std::vector<lock::Token>& tokens) {
  std::string out = "{";
  for (auto token : tokens) {
    if (out.size() > 1)
      out += ',';
    out += std::to_string(token);
  }
  return out + "}";
}

std::optional<std::string> microseconds_of(lock::Instant instant) {
  if (instant == lock::Instant{})
    return std::nullopt;  // unknown
  return std::to_string(duration_cast<microseconds>(instant.time_since_epoch()).count());
}

std::string boolean(bool value) {
  return value ? "true" : "false";
}

// How long each operation keeps trying through server trouble (a full,
// starting, restarting or read-only server): an acquire is bounded by its
// caller (-w, -n: waiting.cpp), the rest here. A renewal is short, since
// clock run's heartbeat retries on its own schedule; a release is long, so
// that a finished job's lease does not stay to expire after a failover;
// leaving the queue and recording a missed run come after the caller's
// deadline, which they must not stretch.
constexpr seconds k_renew_patience{3};
constexpr seconds k_release_patience{30};
constexpr seconds k_after_deadline_patience{1};
constexpr seconds k_command_patience{10};  // status, history, gc, init
// A holder's look at its lease between renewals: short, since the heartbeat
// thread that asks also renews (and the next renewal finds a loss anyway).
constexpr seconds k_check_patience{1};
// How often a watching holder drains its notifications: a socket read, no
// round trip.
constexpr milliseconds k_watch_interval{200};

}  // namespace

class PostgresStore::Impl {
 public:
  // Connects on the first call, within that call's deadline.
  explicit Impl(const StoreOptions& options)
      : m_schema(checked(options.pg_schema)),
        m_set(pg::quoted(pg::routine_set(m_schema))),
        m_conn(options.url, options.connect_timeout) {}

  // The calls that follow keep trying through trouble for `patience`.
  void patience(steady_clock::duration patience) {
    auto until = steady_clock::now() + patience;
    m_conn.set_deadline(until, until);
  }

  // An acquire attempt is tried once here (the acquire loop retries it, with
  // the same request id) and must answer by the caller's deadline.
  void acquire_deadline(steady_clock::time_point deadline) { m_acquire_deadline = deadline; }
  // The attempt that comes at the deadline (every wait ends with one) gets a
  // second more: -w D then ends within a second of D whatever the server does.
  void one_acquire_attempt() {
    auto now = steady_clock::now();
    m_conn.set_deadline(now, std::max(m_acquire_deadline, now + seconds(1)));
  }

  // One call of a schema function with bound parameters, as text. The first
  // call of a connection checks the schema version in the same round trip:
  // the function runs only when the schema is at least this binary's latest
  // migration and its functions carry this binary's stamp; otherwise (or with no schema at all) the
  // schema is migrated first and the call made again.
  std::string call(std::string_view what, std::string_view function, std::string_view arguments,
                   const pg::Params& params, pg::Retry retry) {
    std::string invocation =
        m_set + "." + std::string(function) + "(" + std::string(arguments) + ")::text";
    if (!m_schema_ready) {
      auto reply = m_conn.call_if_exists(
          what,
          "SELECT CASE WHEN " + pg::ready_condition(m_schema) + " THEN " + invocation + " END",
          params, retry);
      if (reply) {
        m_schema_ready = true;
        return std::move(*reply);
      }
      migrate();
    }
    return m_conn.call(what, "SELECT " + invocation, params, retry);
  }

  // Like call() for a function returning rows (at least one: it always
  // returns its "now" row, so no rows means the schema is out of date).
  void each_row(std::string_view what, std::string_view function, std::string_view arguments,
                const pg::Params& params, pg::Retry retry,
                const std::function<void(const RowView&)>& visit) {
    std::string sql =
        "SELECT * FROM " + m_set + "." + std::string(function) + "(" + std::string(arguments) + ")";
    if (!m_schema_ready) {
      auto rows = m_conn.each_row(what, sql + " WHERE " + pg::ready_condition(m_schema), params,
                                  retry, visit);
      if (rows && *rows > 0) {
        m_schema_ready = true;
        return;
      }
      migrate();
    }
    if (!m_conn.each_row(what, sql, params, retry, visit)) {
      throw Error(ExitCode::config, "the clock schema is missing or incomplete (no function " +
                                        std::string(function) + "): run 'clock init'");
    }
  }

  void migrate() {
    m_conn.run_migrations(pg::migration_script(m_schema));
    m_schema_ready = true;
  }

  // The migrations the schema records, or nullopt when it has none yet.
  std::optional<std::set<int>> recorded_migrations() {
    std::set<int> versions;
    auto rows = m_conn.each_row(
        "read the schema's migrations",
        "SELECT version::text FROM " + pg::quoted(m_schema) + ".schema_migrations", {},
        pg::Retry::if_broken, [&](const RowView& row) { versions.insert(std::stoi(row.at(0))); });
    if (!rows)
      return std::nullopt;
    return versions;
  }

  // clock init's: the sets of releases no host may still run.
  void retire_sets() { m_conn.run_migrations(pg::retire_script(m_schema)); }

  std::vector<std::string> setup_warnings() {
    std::vector<std::string> warnings;
    if (auto warning = pg::asynchronous_standby_warning(m_conn))
      warnings.push_back(std::move(*warning));
    if (auto warning = pg::secrets_in_server_log_warning(m_conn))
      warnings.push_back(std::move(*warning));
    for (auto& warning : retired_routines())
      warnings.push_back(std::move(warning));
    return warnings;
  }

  std::vector<std::string> retired_routines() {
    if (auto warning = pg::retired_sets_warning(m_conn, m_schema))
      return {std::move(*warning)};
    return {};
  }

  std::vector<std::string> missing_run_privileges() {
    return pg::missing_run_privileges(m_conn, pg::routine_set(m_schema));
  }

  // What the last blocked attempt said about when to look again without
  // being told: the earliest expiry of a lease or queue entry in the way, how
  // many queue entries are ahead of this waiter's (counted up to a bound),
  // and where the first of them and this waiter's own stand (positions): how
  // far back it is, and from the last look, how fast the queue moves.
  void blocked_until(std::optional<steady_clock::time_point> next_expiry, std::string owner,
                     std::optional<int> ahead, std::optional<std::int64_t> mine,
                     std::optional<std::int64_t> front) {
    m_next_expiry = next_expiry;
    m_owner = std::move(owner);
    if (!ahead)
      return;
    auto now = steady_clock::now();
    if (front && m_front && m_looked != steady_clock::time_point{} && *front > *m_front) {
      // The latest measure alone: a queue speeds up once its waiters
      // start coming in time, and an older, slower one would keep them late.
      double seconds = std::max(duration<double>(now - m_looked).count(), 0.001);
      m_rate = static_cast<double>(*front - *m_front) / seconds;
      m_unmoved = 0;
    } else if (front && m_front && *front == *m_front) {
      ++m_unmoved;
    } else {
      m_rate.reset();
      m_unmoved = 0;
    }
    // A reply with no queue entry in the way (only leases) tells no front:
    // the first such look starts the clock of standing still, later ones do
    // not restart it.
    if (front ? !m_front || *front != *m_front : m_looked == steady_clock::time_point{})
      m_front_since = now;
    m_ahead = *ahead;
    m_mine = mine;
    m_front = front;
    m_looked = now;
  }

  // Borrowed, not held (man clock, COMMANDS): only the first three waiters of a queue
  // keep their connection, to LISTEN: a release or a departure notifies the
  // first waiters (notify_heads), and the next ones are then already
  // listening when the first one's turn ends, so even a queue of short jobs
  // hands over at a notification's pace, and a waiter further back has two
  // turns' time to come and listen. While the queue moves (or before a
  // waiter has seen whether it does), the first eight keep theirs: with
  // short jobs two turns are too short for a waiter's look to come in time,
  // and a lock whose first waiter is not listening stays free until that
  // waiter looks (8 clock processes contending for one lock through 25
  // turns each went at half the pace of etcd's with three). One beyond the
  // first three that finds the queue standing still lets its connection go.
  // Through a pooler (no notifications) only the first keeps its client
  // connection, and polls every 50 ms with an attempt that takes no lock
  // (try_acquire's fast path 0). Every other waiter closes its connection
  // and looks again at its pace(); the attempt that finds it among the first
  // makes it LISTEN.
  void wait_for_change(steady_clock::time_point until) {
    auto now = steady_clock::now();
    if (until <= now)
      return;
    // Every change that can let this waiter in is notified to it, except
    // the expiry of what is in its way: look again then too.
    steady_clock::duration slice = until - now;
    if (m_next_expiry)
      slice =
          std::min(slice, std::max<steady_clock::duration>(*m_next_expiry - now, milliseconds(10)));
    const bool beyond_the_first = m_ahead > listeners_ahead();
    if (beyond_the_first && !listens_while_moving(now)) {
      m_conn.close();
      auto sleep = std::min<steady_clock::duration>(slice, pace());
      spdlog::debug(
          "waiting without a connection: {} ahead, the queue moving {:.1f} positions/s; looking "
          "again in {} ms",
          m_ahead, m_rate.value_or(0), duration_cast<milliseconds>(sleep).count());
      std::this_thread::sleep_for(sleep);
      return;
    }
    spdlog::debug("waiting on a connection: {} ahead", m_ahead);
    // Beyond the first three, look again once the queue may have stopped.
    if (beyond_the_first)
      slice = std::min<steady_clock::duration>(slice, k_standing_still);
    const std::string channel = pg::notify_channel(m_schema);
    if (m_conn.listening() && !m_conn.notified_directly()) {
      std::uniform_int_distribution<int> poll_ms(40, 60);
      slice = std::min<steady_clock::duration>(slice, milliseconds(poll_ms(m_random)));
    }
    // The first call on a connection LISTENs and returns at once: look again.
    m_conn.await(channel, m_owner, slice);
  }

  // Whether a waiter beyond the first three keeps its connection: among the
  // first eight, where notifications arrive, while the queue moves (its
  // first entry changed within the last second, or this waiter has not yet
  // seen it stand still).
  bool listens_while_moving(steady_clock::time_point now) const {
    return m_notified && m_ahead < k_listeners_while_moving &&
           now - m_front_since < k_standing_still;
  }

  // How many entries may be ahead of a waiter that keeps its connection:
  // two where notifications arrive (the first three listen), none through a
  // pooler (only the first polls). Until a LISTEN has told which, taken as
  // direct, so that the second and third waiters connect and find out.
  int listeners_ahead() {
    if (m_conn.listening())
      m_notified = m_conn.notified_directly();
    return m_notified ? k_listeners - 1 : 0;
  }

  // How long a waiter that keeps no connection sleeps before it looks again.
  // While the queue moves: until it is due among the waiters that keep one,
  // at the speed the first entry ahead moved since the last look (in queue
  // positions, so however far back), a third early (0.6-0.75 of the time),
  // and at most 30 ms per entry ahead (a speed measured while the queue
  // starts, or while its waiters come late, is too slow to go by); a queue
  // of short jobs then finds its next waiters already listening, with a few
  // looks per waiter however long the queue. Otherwise (the first
  // look, or the queue did not move) 20 ms per entry ahead (a short job's
  // turn: a slower step would hold a queue of short jobs to its pace; past
  // the count's bound, per position), doubled each time its place did not
  // move, at most a second per entry ahead. waiting.cpp bounds it by a
  // third of the queue entry's lifetime (10 s with the default TTL), which
  // keeps the entry alive.
  steady_clock::duration pace() {
    const int ahead = std::max(1, m_ahead);
    // Past the count's bound, how far back in positions.
    int far = ahead;
    if (m_ahead >= k_waiters_ahead_counted && m_mine && m_front && *m_mine > *m_front)
      far = static_cast<int>(std::min<std::int64_t>(*m_mine - *m_front, 1'000'000));
    if (m_rate && m_unmoved == 0 && m_mine && m_front && *m_mine > *m_front) {
      // Positions of other resources' entries may fall between: one entry
      // ahead spans `step` positions on average, where all were counted.
      double distance = static_cast<double>(*m_mine - *m_front);
      double step = m_ahead < k_waiters_ahead_counted ? distance / ahead : 1.0;
      int listening = m_notified ? k_listeners_while_moving - 1 : listeners_ahead();
      double due = std::max(distance - listening * step, step);
      std::uniform_real_distribution<double> jitter(0.6, 0.75);
      auto wait = duration<double>(due / *m_rate * jitter(m_random));
      return std::clamp<steady_clock::duration>(duration_cast<milliseconds>(wait), k_pace_least,
                                                k_pace_moving * far);
    }
    milliseconds base = k_pace_step * far;
    for (int i = 0; i < m_unmoved && base < k_pace_cap * far; ++i)
      base *= 2;
    base = std::min(base, k_pace_cap * far);
    std::uniform_real_distribution<double> jitter(0.75, 1.25);
    return duration_cast<milliseconds>(base * jitter(m_random));
  }

  // A holder's connection between renewals: closed once idle for k_idle.
  void rest() { m_conn.close_if_idle(k_idle); }

  static constexpr milliseconds k_idle{1000};
  static constexpr int k_listeners = 3;
  static constexpr int k_listeners_while_moving = 8;
  // A queue whose first entry has not changed for this long stands still.
  static constexpr milliseconds k_standing_still{1000};
  static constexpr milliseconds k_pace_step{20};
  static constexpr milliseconds k_pace_least{10};
  static constexpr milliseconds k_pace_moving{30};
  static constexpr milliseconds k_pace_cap{1000};

 private:
  static std::string checked(const std::string& schema) {
    pg::validate_schema_name(schema);
    return schema;
  }

  std::string m_schema;
  std::string m_set;  // quoted: where this release's functions are
  pg::Connection m_conn;
  bool m_schema_ready = false;
  std::optional<steady_clock::time_point> m_next_expiry;  // see blocked_until()
  std::string m_owner;                                    // the waiting request's
  int m_ahead = 0;                      // queue entries ahead of ours at the last blocked attempt
  int m_unmoved = 0;                    // blocked attempts in a row that found m_front unchanged
  steady_clock::time_point m_looked{};  // when that attempt answered
  std::optional<std::int64_t> m_mine;   // this waiter's queue position (fast paths only)
  std::optional<std::int64_t> m_front;  // the first entry ahead's position
  steady_clock::time_point m_front_since{};  // when an attempt last saw m_front change
  std::optional<double> m_rate;              // positions a second the front moved by before it
  bool m_notified = true;                    // whether notifications reach this store's connections
  std::minstd_rand m_random{util::random_seed()};
  steady_clock::time_point m_acquire_deadline = steady_clock::time_point::max();
};

PostgresStore::PostgresStore(const StoreOptions& options)
    : m_impl(std::make_unique<Impl>(options)) {
  if (options.watch_lease)
    m_watch = std::make_unique<pg::LeaseWatch>(options.url, options.connect_timeout,
                                               pg::lost_channel(options.pg_schema));
}

PostgresStore::~PostgresStore() = default;

Attempt PostgresStore::try_acquire(const LockRequest& request, bool queue) {
  const std::string& request_id = request.request_id;
  // Retried once after a dropped connection: the request id makes a grant
  // that did take effect come back unchanged instead of re-entering.
  AcquireReply reply;
  m_impl->one_acquire_attempt();
  try {
    reply = parse_acquire(m_impl->call(
        "acquire", "try_acquire",
        "$1, $2::text[], $3, $4, $5::uuid, $6, $7, $8, $9, $10, $11, $12, $13,"
        " 'epoch'::timestamptz + $14::bigint * interval '1 microsecond', $15, $16, $17,"
        " $18::bigint",
        {request.ns, text_array(request.resources), std::string(lock::to_string(request.mode)),
         std::to_string(request.slots), request.owner.str(), std::to_string(request.ttl.count()),
         request_id, boolean(queue), request.info.host, request.info.ip,
         std::to_string(request.info.pid), request.info.user, request.info.command,
         microseconds_of(request.info.started), boolean(request.record_refusal), request.secret,
         describe(Caller{request.info.user, request.info.host, request.info.pid, {}}),
         request.once_per ? std::optional(std::to_string(request.once_per->count()))
                          : std::nullopt},
        pg::Retry::if_broken));
  } catch (const pg::HierarchyBusy&) {
    // Another program holds these resources' hierarchy in an open
    // transaction past the call's bounded wait (lock_hierarchies,
    // 10_util.sql): blocked, like any holder (-n: 75, recorded here, as the
    // call that would have recorded it was rolled back; a waiter tries
    // again, soon: that transaction's end may notify nobody).
    m_impl->blocked_until(steady_clock::now() + milliseconds(500), request.owner.str(),
                          std::nullopt, std::nullopt, std::nullopt);
    Attempt blocked;
    blocked.outcome = Outcome::blocked;
    blocked.behind_transaction =
        std::string(
            "another transaction holds locks under the same top-level name: a session "
            "kept clock's rows of this hierarchy in an open transaction of its own for "
            "over ") +
        (queue ? "5s" : "2s") +
        " (clock's own calls hold them for milliseconds); look for it in pg_stat_activity "
        "('idle in transaction')";
    if (!queue && request.record_refusal)
      record_skip(request, blocked);
    return blocked;
  }
  if (reply.attempt.outcome == Outcome::blocked) {
    std::optional<steady_clock::time_point> next_expiry;
    if (reply.next_expiry_in)
      next_expiry = steady_clock::now() + *reply.next_expiry_in + milliseconds(20);
    std::optional<std::int64_t> front;
    if (!reply.attempt.blocking_waiters.empty())
      front = reply.attempt.blocking_waiters.front().position;
    m_impl->blocked_until(next_expiry, request.owner.str(), reply.ahead, reply.mine, front);
  }
  if (reply.refused)
    throw refusal_error(Operation::acquire, *reply.refused, request.owner);
  return std::move(reply.attempt);
}

// A -n refusal the acquire call could not record: a failure to record it
// changes nothing for the caller, who was not acquired either way (75).
void PostgresStore::record_skip(const LockRequest& request, const Attempt& blocked) {
  try {
    record_missed_run(request, EventKind::skipped, in_the_way(blocked));
  } catch (const Error& error) {
    spdlog::warn("could not record the skipped run in history: {}", error.what());
  }
}

void PostgresStore::record_missed_run(const LockRequest& request, EventKind kind,
                                      const std::optional<InTheWay>& in_the_way) {
  std::optional<std::string> way;
  if (in_the_way) {
    nlohmann::json object = {{"owner", in_the_way->owner.str()}, {"host", in_the_way->host}};
    object["token"] = in_the_way->token ? nlohmann::json(*in_the_way->token) : nlohmann::json();
    way = object.dump();
  }
  // Never retried: a record that did take effect must not be written twice.
  m_impl->patience(k_after_deadline_patience);
  m_impl->call("recording a run that did not happen", "record_missed_run",
               "$1, $2, $3::text[], $4::uuid, $5, $6, $7, $8, $9, $10, $11::jsonb, $12",
               {std::string(to_string(kind)), request.ns, text_array(request.resources),
                request.owner.str(), std::string(lock::to_string(request.mode)), request.info.host,
                request.info.ip, std::to_string(request.info.pid), request.info.user,
                request.info.command, way, request.secret},
               pg::Retry::never);
}

void PostgresStore::leave_queue(const LockRequest& request) {
  std::optional<std::string> request_id;
  if (!request.request_id.empty())
    request_id = request.request_id;
  m_impl->patience(k_after_deadline_patience);
  m_impl->call(
      "leaving the queue", "leave_queue", "$1, $2::text[], $3::uuid, $4, $5",
      {request.ns, text_array(request.resources), request.owner.str(), request_id, request.secret},
      pg::Retry::if_broken);
}

void PostgresStore::set_acquire_deadline(steady_clock::time_point deadline) {
  m_impl->acquire_deadline(deadline);
}

void PostgresStore::wait_for_change(steady_clock::time_point until) {
  m_impl->wait_for_change(until);
}

void PostgresStore::renew(const RenewRequest& request) {
  m_impl->patience(k_renew_patience);
  auto lost = parse_renew(m_impl->call(
      "renew", "renew", "$1, $2::text[], $3::uuid, $4::bigint[], $5, $6, $7",
      {request.ns, text_array(request.resources), request.owner.str(), bigint_array(request.tokens),
       std::to_string(request.ttl.count()), request.secret, describe(request.caller)},
      pg::Retry::if_broken));
  if (!lost.empty())
    throw refusal_error(Operation::renew, lost.front(), request.owner);
}

void PostgresStore::note_leftovers(const LeftoversNote& note) {
  const auto& held = note.held;
  m_impl->patience(k_renew_patience);
  // Writing the same list twice is harmless: retried after a dropped connection.
  auto lost = parse_renew(m_impl->call(
      "recording the leftovers", "note_leftovers",
      "$1, $2::text[], $3::uuid, $4::bigint[], $5::jsonb, $6, $7",
      {held.ns, text_array(held.resources), held.owner.str(), bigint_array(held.tokens),
       encode_leftovers(note.leftovers), held.secret, describe(held.caller)},
      pg::Retry::if_broken));
  if (!lost.empty())
    throw refusal_error(Operation::renew, lost.front(), held.owner);
}

void PostgresStore::note_holder(const RenewRequest& held, const HolderTrace& trace) {
  m_impl->patience(k_renew_patience);
  // Writing the same trace twice is harmless: retried after a dropped connection.
  auto lost = parse_renew(m_impl->call(
      "recording this holder's process facts", "note_holder",
      "$1, $2::text[], $3::uuid, $4::bigint[], $5, $6::bigint, $7::bigint, $8::bigint, "
      "$9::bigint, $10, $11, $12",
      {held.ns, text_array(held.resources), held.owner.str(), bigint_array(held.tokens),
       trace.boot_id, std::to_string(trace.pid_ns), std::to_string(trace.pid),
       std::to_string(trace.pid_start), std::to_string(trace.job_group), trace.job_cgroup,
       held.secret, describe(held.caller)},
      pg::Retry::if_broken));
  if (!lost.empty())
    throw refusal_error(Operation::renew, lost.front(), held.owner);
}

// Within the acquire's own deadline (set_acquire_deadline): these run
// between its attempts.
std::optional<HolderTrace> PostgresStore::holder_trace(
    const std::string& ns, const lock::Resource& resource, const lock::OwnerId& owner,
    lock::Token token, const std::string& boot_id, std::int64_t pid_ns) {
  return parse_holder_trace(m_impl->call(
      "reading a holder's process facts", "holder_trace",
      "$1, $2, $3::uuid, $4::bigint, $5, $6::bigint",
      {ns, resource.str(), owner.str(), std::to_string(token), boot_id, std::to_string(pid_ns)},
      pg::Retry::if_broken));
}

bool PostgresStore::end_dead_lease(const DeadHolderClaim& claim) {
  // Sent again after a dropped connection, an ended lease answers false:
  // the next attempt finds it gone either way.
  return m_impl->call("ending a dead holder's lease", "end_dead_lease",
                      "$1, $2, $3::uuid, $4::bigint, $5, $6::bigint, $7::bigint, $8::bigint, $9",
                      {claim.ns, claim.resource.str(), claim.owner.str(),
                       std::to_string(claim.token), claim.trace.boot_id,
                       std::to_string(claim.trace.pid_ns), std::to_string(claim.trace.pid),
                       std::to_string(claim.trace.pid_start), holder_died_by(claim.caller)},
                      pg::Retry::if_broken) == "true";
}

std::optional<milliseconds> PostgresStore::still_holds_interval() const {
  if (!m_watch)
    return std::nullopt;
  return k_watch_interval;
}

bool PostgresStore::still_holds(const RenewRequest& held) {
  if (m_watch && !m_watch->may_have_lost(held.owner.str()))
    return true;
  m_impl->patience(k_check_patience);
  for (std::size_t i = 0; i < held.resources.size(); ++i) {
    const auto& resource = held.resources[i];
    StatusQuery query;
    query.ns = held.ns;
    query.prefix = resource;
    auto snapshot = status_within(query);
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

std::vector<Released> PostgresStore::release(const ReleaseRequest& request) {
  steady_clock::duration patience = k_release_patience;
  if (request.expires_by) {
    patience = std::clamp<steady_clock::duration>(*request.expires_by - steady_clock::now(),
                                                  k_after_deadline_patience, k_release_patience);
  }
  m_impl->patience(patience);
  std::vector<Refused> failures;
  ReleaseReply reply;
  if (request.force) {
    reply = parse_release(m_impl->call(
        "forced release", "force_release", "$1, $2::text[], $3",
        {request.ns, text_array(request.resources), describe(request.caller)}, pg::Retry::never));
    std::erase_if(reply.released, [&](const Released& released) {
      if (released.holders_removed > 0)
        return false;
      failures.push_back({Refusal::nobody_holds, released.resource});
      return true;
    });
  } else {
    if (!request.owner) {
      throw Error(ExitCode::usage, "release needs the owner id: --owner or CLOCK_OWNER");
    }
    reply = release_once(request);
    failures = std::move(reply.refused);
  }
  if (!failures.empty())
    throw refusal_error(Operation::release, failures.front(), request.owner);
  return std::move(reply.released);
}

// Not simply sent again after a lost reply: a second release would undo
// another re-entry. Where the caller says what it holds (tokens, depths), the
// lease is looked up instead: a release that took effect is reported done, one
// that did not is sent again, until the outcome is known or the release's
// patience (k_release_patience) runs out.
ReleaseReply PostgresStore::release_once(const ReleaseRequest& request) {
  for (;;) {
    try {
      // release2(): release() and how clock run's command ended, in one
      // transaction (sql/postgres/functions/35_run_ends.sql).
      std::optional<std::string> exit_code;
      std::optional<std::string> exit_signal;
      if (request.exit && request.exit->code)
        exit_code = std::to_string(*request.exit->code);
      else if (request.exit)
        exit_signal = std::to_string(request.exit->signal);
      return parse_release(m_impl->call(
          "release", "release2",
          "$1, $2::text[], $3::uuid, $4, $5, $6, $7::bigint[], $8, $9::integer, $10::integer",
          {request.ns, text_array(request.resources), request.owner->str(), request.secret,
           describe(request.caller), request.caller.host, bigint_array(request.caller.lineage),
           boolean(request.succeeded), exit_code, exit_signal},
          pg::Retry::never));
    } catch (const pg::OutcomeUnknown& unknown) {
      const bool knows_lease = request.tokens.size() == request.resources.size() &&
                               request.depths.size() == request.resources.size();
      if (!knows_lease)
        throw;
      spdlog::info("{}; looking it up", unknown.what());
      std::optional<bool> done;
      try {
        done = release_took_effect(
            request, [this](const StatusQuery& query) { return status_within(query); },
            [this](const HistoryQuery& query) { return history_within(query); });
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

Snapshot PostgresStore::status(const StatusQuery& query) {
  m_impl->patience(k_command_patience);
  auto snapshot = status_within(query);
  std::optional<std::string> prefix;
  if (query.prefix)
    prefix = query.prefix->str();
  snapshot.run_results = parse_run_results(m_impl->call(
      "reading run results", "run_results", "$1, $2", {query.ns, prefix}, pg::Retry::if_broken));
  return snapshot;
}

Snapshot PostgresStore::status_within(const StatusQuery& query) {
  std::optional<std::string> prefix;
  if (query.prefix)
    prefix = query.prefix->str();
  StatusRows rows(InstantFormat::utc_text);
  m_impl->each_row("status", "status_rows", "$1, $2, $3",
                   {query.ns, prefix, boolean(query.include_expired)}, pg::Retry::if_broken,
                   [&](const RowView& row) { rows.add(row); });
  return rows.take();
}

void PostgresStore::expect_runs(const Expectation& expectation) {
  m_impl->patience(k_check_patience);
  auto declared = m_impl->call(
      "declaring the expected period", "expect_runs", "$1, $2::text[], $3, $4::uuid, $5, $6",
      {expectation.ns, text_array(expectation.resources), std::to_string(expectation.every.count()),
       expectation.owner.str(), expectation.secret, describe(expectation.caller)},
      pg::Retry::if_broken);
  if (declared != "true") {  // a boolean as text
    throw Error(ExitCode::not_owner,
                "only the holder may declare a resource's expected period, and owner " +
                    expectation.owner.str() + " holds no live lease on every resource named");
  }
}

ExpectedRuns PostgresStore::expected_runs(const ExpectedQuery& query) {
  m_impl->patience(k_command_patience);
  std::optional<std::string> prefix;
  if (query.prefix)
    prefix = query.prefix->str();
  std::optional<std::string> since;
  if (query.since)
    since = std::to_string(
        std::chrono::duration_cast<std::chrono::microseconds>(query.since->time_since_epoch())
            .count());
  ExpectedRows rows;
  m_impl->each_row("reading expected runs", "expected_rows", "$1, $2, $3::bigint",
                   {query.ns, prefix, since}, pg::Retry::if_broken,
                   [&](const RowView& row) { rows.add(row); });
  return rows.take();
}

std::vector<HistoryEvent> PostgresStore::history(const HistoryQuery& query) {
  m_impl->patience(k_command_patience);
  return history_within(query);
}

std::vector<HistoryEvent> PostgresStore::history_within(const HistoryQuery& query) {
  std::optional<std::string> prefix;
  if (query.prefix)
    prefix = query.prefix->str();
  std::optional<std::string> event;
  if (query.event)
    event = std::string(to_string(*query.event));
  std::optional<std::string> since_us;
  if (query.since)
    since_us = std::to_string(
        std::chrono::duration_cast<std::chrono::microseconds>(query.since->time_since_epoch())
            .count());
  std::optional<std::string> within_ms;
  if (query.within)
    within_ms = std::to_string(query.within->count());
  return parse_history(m_impl->call(
      "history", "history2", "$1, $2, $3, $4, $5::bigint, $6::bigint, $7",
      {query.ns, prefix, std::to_string(query.limit), event, since_us, within_ms, query.host},
      pg::Retry::if_broken));
}

// One batch per call (and transaction), paced (gc_pacing.hpp), until a batch
// comes back short.
GcReport PostgresStore::gc(const GcOptions& options) {
  BatchPacer pacer(options.batch_size);
  std::optional<std::string> older_than;
  if (options.history_older_than)
    older_than = std::to_string(options.history_older_than->count());
  GcReport total;
  for (;;) {
    const int batch = pacer.rows();
    m_impl->patience(k_command_patience);
    auto started = std::chrono::steady_clock::now();
    GcReport report = parse_gc(m_impl->call(
        "gc", "gc_batch", "$1, $2, $3",
        {std::to_string(batch), older_than, boolean(options.dry_run)}, pg::Retry::if_broken));
    pacer.took(std::chrono::steady_clock::now() - started);
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

MigrationReport PostgresStore::migrate() {
  m_impl->patience(k_command_patience);
  auto before = m_impl->recorded_migrations();
  m_impl->migrate();
  m_impl->retire_sets();
  auto after = m_impl->recorded_migrations().value_or(std::set<int>{});
  return migration_report(before, after, sql::postgres_migrations());
}

std::optional<milliseconds> PostgresStore::idle_limit() const {
  return Impl::k_idle;
}

void PostgresStore::rest() {
  m_impl->rest();
}

std::vector<std::string> PostgresStore::setup_warnings() {
  return m_impl->setup_warnings();
}

std::vector<std::string> PostgresStore::retired_routines() {
  m_impl->patience(k_command_patience);
  return m_impl->retired_routines();
}

std::vector<std::string> PostgresStore::missing_run_privileges() {
  m_impl->patience(k_command_patience);
  return m_impl->missing_run_privileges();
}

std::unique_ptr<Store> make_postgres_store(const StoreOptions& options) {
  return std::make_unique<PostgresStore>(options);
}

std::string postgres_schema_sql(const std::string& pg_schema) {
  return pg::migration_script(pg_schema);
}

}  // namespace clk::store
