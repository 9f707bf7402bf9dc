// The Store interface: every operation on the lock table, shaped so that each
// is one transaction (one round trip on PostgreSQL) with all lease arithmetic
// on the database's clock. Commands never see SQL; the two implementations
// (store/sqlite/, store/postgres/) never include each other.
//
// Failures are clk::Error: `unavailable` (69) for a backend that cannot be
// reached (a caller may retry), `local_database` (74) for an unusable SQLite
// file, `not_owner` (77) for renew/release of a lease this owner does not hold,
// `usage` (64) for a request the lock model refuses (slot counts disagree).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "error.hpp"
#include "lock/lease.hpp"
#include "store/holder_trace.hpp"

namespace clk::store {

using std::chrono::milliseconds;

// Server trouble (unreachable, full, restarting, a lock timeout or deadlock
// retried) that lasts this long is logged once as a warning while clock goes
// on trying; shorter trouble that ends in success prints nothing at the
// default verbosity (cron mails whatever a job writes to stderr), as a short
// wait for a held lock does off a terminal (output/wait_reporter.hpp).
inline constexpr std::chrono::seconds k_long_trouble{60};

// Who asks for an operation on a lease: recorded as `by` in history when it
// is not the holder's own process tree (store::by_of).
struct Caller {
  std::string user;
  std::string host;
  std::int64_t pid = 0;
  std::vector<std::int64_t> lineage;  // its pid, its parent's, … (util::process_lineage)
};
// "user@host pid N": how history names a caller.
std::string describe(const Caller& caller);
// "" when the caller runs inside the holder's process tree on the holder's
// host (the lease's pid is the caller or one of its ancestors), else
// describe(caller): who asked, for history.
std::string by_of(const Caller& caller, const lock::OwnerInfo& holder);

struct LockRequest {
  std::string ns;
  std::vector<lock::Resource> resources;  // canonical order, no duplicates
  lock::Mode mode = lock::Mode::exclusive;
  int slots = 0;  // 0: a plain lock; N > 0: a counting semaphore of N
  lock::OwnerId owner;
  // The owner's secret: a new lease keeps only its hash, and re-entering a
  // lease that has one needs it. Empty only in tests of old-format leases.
  std::string secret;
  lock::OwnerInfo info;
  milliseconds ttl = lock::k_default_ttl;  // 0: no expiry
  // A fresh id per `clock acquire` call, so that an attempt retried after a
  // dropped connection takes effect once (no second re-entry, no new token).
  std::string request_id;
  // A run that does not happen is history (clock run): a blocked attempt
  // that does not queue (-n) records `skipped`, with who was in the way, in
  // the same transaction.
  bool record_refusal = false;
  // --once-per D (clock run): a request that would be granted is not when a
  // successful run of one of its resources started at or after the
  // database's now - D; the outcome is then `done`, recorded as skipped
  // naming that run, in the same transaction. None: no such check.
  std::optional<milliseconds> once_per;
  // clock run's trace (its pid is info.pid), written on each lease the
  // request creates, with the grant: a holder that dies at any point after
  // its grant is seen dead by its own host at once (dead_holder.hpp). A
  // re-entered lease keeps the outer holder's. None (`clock acquire`, whose
  // holder is the calling shell): such a lease waits for its TTL.
  std::optional<HolderTrace> holder;
};

// The successful run that did a --once-per period: the lease it ran under
// and when that was granted, on the database's clock.
struct PeriodRun {
  lock::Resource resource;
  lock::OwnerId owner;
  std::string host;
  lock::Token token = 0;
  lock::Instant started{};
};

struct Grant {
  lock::Resource resource;
  lock::Token token = 0;
  int depth = 1;  // re-entry count after this grant
};

// done: grantable, but a successful run already did the --once-per period.
enum class Outcome { granted, blocked, deadlock, done };

// One owner of a deadlock cycle and the resource it waits for, which the next
// link's owner holds or is queued for ahead of it; the last link waits for
// the first link's owner. The first link is the requester.
struct CycleLink {
  lock::OwnerId owner;
  std::string host;
  lock::Resource waits_for;
};
using Cycle = std::vector<CycleLink>;

// "owner A (host) -> x -> owner B (host) -> y -> owner A (host)": each arrow
// reads "waits for x, held or queued for by".
std::string describe(const Cycle& cycle);

// The most earlier queue entries PostgreSQL's try_acquire counts (the LIMIT
// of in_the_way() in sql/postgres/functions/20_acquire.sql): a waiter further
// back only needs to know that it is far back.
inline constexpr int k_waiters_ahead_counted = 64;

// How many queue entries stand ahead of a waiter: `counted`, as a blocked
// reply counted them, or, once that reaches k_waiters_ahead_counted, how far
// back in positions its own entry (`mine`) stands from the first one ahead
// (`front`), where the reply names both.
int waiters_ahead(int counted, std::optional<std::int64_t> mine, std::optional<std::int64_t> front);

struct Attempt {
  Outcome outcome = Outcome::blocked;
  std::vector<Grant> grants;                   // granted: one per resource, request order
  std::vector<lock::Lease> blocking_leases;    // blocked: who holds what is in the way
  std::vector<lock::Waiter> blocking_waiters;  // blocked: earlier waiters in the way
  // blocked: how many earlier queue entries are in the way, where the backend
  // lists fewer than it counts (PostgreSQL lists the first and counts up to
  // k_waiters_ahead_counted); nullopt: blocking_waiters lists them all.
  std::optional<int> waiters_ahead;
  // blocked: no holder or waiter but a session that kept these resources'
  // hierarchy rows in an open transaction of its own past the bounded wait
  // of clock's call (PostgreSQL: 2 s for -n, 5 s otherwise); its words.
  std::optional<std::string> behind_transaction;
  Cycle cycle;                       // deadlock: the requester first
  std::optional<PeriodRun> done_by;  // done: the run that did the period
};

struct RenewRequest {
  std::string ns;
  std::vector<lock::Resource> resources;
  lock::OwnerId owner;
  std::string secret;               // proof of ownership; a lease without a hash needs none
  std::vector<lock::Token> tokens;  // same order as resources; empty: any token of this owner
  milliseconds ttl = lock::k_default_ttl;
  Caller caller;  // recorded with a refusal
};

// What a holder reports of the processes its command left running (clock
// run's --leftovers): recorded on each of its leases, where `status` shows
// the running ones and the lease's end in history names them all with their
// fate. `held.ttl` is not used.
struct LeftoversNote {
  RenewRequest held;  // the leases and the owner's proof, as a renewal has them
  std::vector<lock::Leftover> leftovers;
};

// How clock run's command ended: its exit code, or the signal that ended it.
struct RunExit {
  std::optional<int> code;  // none: ended by `signal`
  int signal = 0;
  // The one notion of a successful run: what --once-per counts, what
  // history and metrics call succeeded.
  bool succeeded() const { return code == 0; }
  // The signal that ended it; none when it exited (`code`). History and the
  // run results keep the two so, one of them set.
  std::optional<int> signal_if_killed() const {
    return code ? std::nullopt : std::optional<int>(signal);
  }
};
// "exit 3", "SIGTERM" (or "signal N" for a number the host cannot name).
std::string describe(const RunExit& exit);

struct ReleaseRequest {
  std::string ns;
  std::vector<lock::Resource> resources;
  std::optional<lock::OwnerId> owner;  // required unless `force`
  std::string secret;                  // proof of ownership; a lease without a hash needs none
  bool force = false;
  Caller caller;  // who asks: recorded for a forced release, a refusal, or a release
                  // from outside the holder's process tree
  // clock run's command exited 0 and the lease ends here: the run is the
  // last success of each resource (what --once-per looks for).
  bool succeeded = false;
  // clock run: how its command ended, recorded on each lease's `released`
  // record and in the resource's run results (metrics). Set with
  // `succeeded` == exit->succeeded().
  std::optional<RunExit> exit;
  // What the owner holds, when it knows (clock run): the token and re-entry
  // depth of each resource, in order. A release whose reply was lost is then
  // looked up and sent again only if it did not take effect (man clock, GUARANTEES).
  std::vector<lock::Token> tokens;
  std::vector<int> depths;
  // When the lease expires on its own at the latest (clock run: the last
  // moment it was known held, plus its TTL): trying past it through server
  // trouble frees nothing, so a run that lost its lease in an outage exits
  // then rather than after the release's whole patience. None: unknown.
  std::optional<std::chrono::steady_clock::time_point> expires_by;
};

struct Released {
  lock::Resource resource;
  int remaining_depth = 0;  // > 0: a re-entry was undone, the lock is still held
  int holders_removed = 0;  // with --force: how many leases were removed
};

struct StatusQuery {
  std::optional<std::string> ns;         // none: every namespace
  std::optional<lock::Resource> prefix;  // the resource and its descendants
  bool include_expired = false;
};

// The end of a lease (released, expired, forced, lost), its start
// (acquired), a run that did not happen: skipped (refused under -n),
// timed_out (gave up after -w), killed (stopped at its runtime limit), or a
// renew, release or re-entry refused for want of the owner's secret
// (refused: the holder's lease, `by` the caller).
enum class EventKind {
  acquired,
  released,
  expired,
  forced,
  lost,
  skipped,
  timed_out,
  killed,
  refused,
  period_changed  // a resource's expected period declared or changed (expect_runs)
};
std::string_view to_string(EventKind kind);
std::optional<EventKind> event_kind_of(std::string_view name);
inline constexpr EventKind k_event_kinds[] = {
    EventKind::acquired, EventKind::released,      EventKind::expired,   EventKind::forced,
    EventKind::lost,     EventKind::skipped,       EventKind::timed_out, EventKind::killed,
    EventKind::refused,  EventKind::period_changed};

// A resource's expected period (man clock, COMMANDS, missed runs): clock run --once-per D
// or --every D declares that each of its resources must run successfully
// at least once every D.
// Declared by the holder only: `owner` must hold a live lease on each
// resource, proven by `secret`, so that a login that read `status` cannot
// lengthen a period and silence the alarm of a job it does not run.
struct Expectation {
  std::string ns;
  std::vector<lock::Resource> resources;
  milliseconds every{0};
  lock::OwnerId owner;
  std::string secret;
  Caller caller;  // who declares, for a 'refused' record
};

struct ExpectedQuery {
  std::optional<std::string> ns;         // none: every namespace
  std::optional<lock::Resource> prefix;  // the resource and its descendants
  std::optional<lock::Instant> since;    // none: now (only the latest success is read)
};

// One expected resource, with the starts of its successful runs at or after
// `since` minus its period, and the latest one before (ascending): what
// store/expected.hpp needs to tell its missed periods.
struct ExpectedRun {
  std::string ns;
  lock::Resource resource;
  milliseconds every{0};
  lock::Instant declared_at{};  // first declared
  std::vector<lock::Instant> successes;
};

struct ExpectedRuns {
  lock::Instant now{};            // the database's clock when they were read
  std::vector<ExpectedRun> runs;  // by namespace and resource
};

// How many times a resource's runs had one outcome (acquired, skipped,
// timed_out, lost, killed, forced: the history events that count), since
// the schema began counting. Kept apart from history, so gc never lowers it.
struct RunCount {
  std::string ns;
  lock::Resource resource;
  EventKind outcome = EventKind::acquired;
  std::int64_t count = 0;
};

// How a resource's clock runs ended, since the schema began recording it
// (kept apart from history, so gc never lowers the counts): how many
// succeeded (exit 0) and failed (another exit code, or a signal), and how
// the latest one ended and how long its lease was held.
struct RunResults {
  std::string ns;
  lock::Resource resource;
  std::int64_t succeeded = 0;
  std::int64_t failed = 0;
  RunExit last_exit;
  milliseconds last_held_for{0};
  lock::Instant last_ended{};
};

struct Snapshot {
  lock::Instant now{};  // the database's clock when the snapshot was taken
  std::vector<lock::Lease> holders;
  std::vector<lock::Waiter> waiters;    // in queue order
  std::vector<bool> holder_expired;     // per holder, true for an expired lease (with --all)
  std::vector<RunCount> run_counts;     // by namespace, resource and outcome name
  std::vector<RunResults> run_results;  // by namespace and resource
  // Resources with an expected period (filled by `clock status`, from
  // Store::expected_runs, read after the rest).
  std::optional<ExpectedRuns> expected;
};

// Who held or awaited the lock when a run did not happen.
struct InTheWay {
  lock::OwnerId owner;
  std::string host;
  std::optional<lock::Token> token;  // none for a queue entry
  // No clock owner but a session that kept clock's rows in an open
  // transaction of its own (k_transaction_owner; `host` says which).
  bool is_transaction() const;
};
// The owner recorded for such a transaction: the nil UUID, no clock's.
inline constexpr std::string_view k_transaction_owner = "00000000-0000-0000-0000-000000000000";
// The first lease, else the first queue entry, in the way of a blocked attempt.
std::optional<InTheWay> in_the_way(const Attempt& blocked);

struct HistoryQuery {
  std::optional<std::string> ns;
  std::optional<lock::Resource> prefix;
  std::optional<EventKind> event;  // none: every kind
  int limit = 50;
  // Only events at or after an instant (`since`), or within a duration
  // back from the database's clock when they are read (`within`): clock
  // history --since and /history.json?since= alike.
  std::optional<lock::Instant> since;
  std::optional<milliseconds> within;
  std::optional<std::string> host;  // only events of this host (the holder's or requester's)
};

struct HistoryEvent {
  std::int64_t id = 0;
  lock::Instant at{};
  EventKind kind = EventKind::acquired;
  std::string ns;
  lock::Resource resource;
  lock::OwnerId owner;
  lock::OwnerInfo info;
  lock::Mode mode = lock::Mode::exclusive;
  lock::Token token = 0;
  std::optional<milliseconds> held_for;  // for the end of a lease
  std::string by;                        // forced, refused, or a release from outside the holder's
                                         // process tree: "user@host pid N" of who asked
  std::optional<InTheWay> in_the_way;    // skipped, timed_out
  std::optional<PeriodRun> done_by;      // skipped under --once-per: the run that did the period
  // The end of a lease (released, forced, expired, lost): what its holder
  // last reported of the processes its command left (note_leftovers).
  std::vector<lock::Leftover> leftovers;
  // released by clock run: how its command ended; none for other events
  // and for records written before clock kept it.
  std::optional<RunExit> exit;
  // period_changed: the period declared, and the one it replaced (none: the
  // resource's first).
  std::optional<milliseconds> every;
  std::optional<milliseconds> previous_every;
};

struct GcOptions {
  bool dry_run = false;
  std::optional<milliseconds> history_older_than;  // none: keep all history
  int batch_size = 1000;  // rows per transaction, so acquirers never wait long
};

struct GcReport {
  std::int64_t expired_leases = 0;
  std::int64_t dead_waiters = 0;
  std::int64_t history_rows = 0;
  // With history pruning: the run counters (clock_runs_total) of resources
  // with no history, lease or queue entry left, which nobody has used for
  // longer than the history kept.
  std::int64_t idle_counters = 0;
};

// Why a store refuses an operation on one resource. Both stores return these
// values and refusal_error() words them, once.
enum class Refusal {
  gone,            // renew: this owner has no lease on it (released, forced, expired and removed)
  expired,         // renew, release: this owner's lease had expired
  other_token,     // renew: this owner holds it under another token (lost, then re-acquired)
  other_owner,     // release: it is held, by other owners only
  not_held,        // release: nobody holds it
  nobody_holds,    // release --force: nobody holds it
  slots_mismatch,  // acquire: --slots differs from the holders' or waiters'
  upgrade,         // acquire: re-entering exclusive what this owner holds shared
  not_proven,      // renew, release, re-entry: held by this owner id, but the caller
                   // lacks its secret (recorded as refused)
};

enum class Operation { acquire, renew, release };

struct Refused {
  Refusal reason = Refusal::gone;
  lock::Resource resource;
  int slots = 0;        // slots_mismatch: the request's --slots (0: a plain lock)
  int other_slots = 0;  // slots_mismatch: the holders' or waiters' (0: a plain lock)
};

// The error for a refusal: usage (64) for a request the lock model refuses
// (slots_mismatch, upgrade), not_owner (77) for the others. `owner` is the
// requester, named in the message when there is one.
Error refusal_error(Operation operation, const Refused& refused,
                    const std::optional<lock::OwnerId>& owner);

// How long a wait-queue entry lives unless refreshed: one TTL, capped so that
// a waiter that dies stops blocking others soon. Waiters refresh their entry
// (by another attempt) at least every third of this (waiting.cpp).
milliseconds waiter_lifetime(milliseconds ttl);

// What creating or migrating the schema did, for clock init to say.
struct MigrationReport {
  bool created = false;              // there was no clock schema before
  std::vector<std::string> applied;  // the migrations applied, in order ("016_run_ends")
  std::string latest;                // the newest migration the schema now holds
};

class Store {
 public:
  virtual ~Store() = default;

  // One attempt at taking every resource of `request`, all or none. When the
  // request is blocked and `queue` is true, the owner is entered in (or kept
  // in) the wait queue, so later conflicting requests cannot overtake it; the
  // entry lives one TTL unless refreshed by another attempt. Expired leases in
  // the way are removed and recorded as expired. Throws the refusal_error of
  // slots_mismatch or upgrade for a request the lock model refuses.
  virtual Attempt try_acquire(const LockRequest& request, bool queue) = 0;

  // The instant by which the acquire calls that follow must have answered,
  // whatever trouble the backend is in (each is abandoned then and throws
  // unavailable). Set by the acquire loop from -w/-n; none by default.
  virtual void set_acquire_deadline(std::chrono::steady_clock::time_point deadline) {
    (void)deadline;
  }

  // Removes this request's wait-queue entries (after a timeout or interrupt).
  virtual void leave_queue(const LockRequest& request) = 0;

  // Records a run that did not happen (timed_out, killed; skipped where the
  // attempt could not record it itself) for each resource of the request,
  // with who was in the way when there was someone.
  virtual void record_missed_run(const LockRequest& request, EventKind kind,
                                 const std::optional<InTheWay>& in_the_way) = 0;

  // Blocks until something that may unblock a waiter happens (a release, an
  // expiry), or until `until`, whichever is first. May return early.
  virtual void wait_for_change(std::chrono::steady_clock::time_point until) = 0;

  // Extends the owner's leases to now + ttl, keeping their tokens. Throws the
  // refusal_error of the first resource that is gone, expired or carries
  // another token (recorded as lost); nothing is extended then.
  virtual void renew(const RenewRequest& request) = 0;

  // Whether the owner still holds a live lease on every resource of `held`
  // under its token (`held.ttl` is not used): what a renewal would find,
  // without extending anything or recording a loss. Throws like renew() when
  // the backend cannot be asked.
  virtual bool still_holds(const RenewRequest& held) = 0;

  // How often a holder may call still_holds() between renewals to learn of a
  // loss promptly: where it is cheap (SQLite re-reads the lease only after
  // another process committed); none where it costs a round trip, and a loss
  // is found by the next renewal instead (PostgreSQL).
  virtual std::optional<milliseconds> still_holds_interval() const = 0;

  // Records on each of the owner's leases the processes its command left
  // (replacing what was recorded before). Acts in the owner's name as
  // renew() does: a caller whose secret does not prove the owner changes
  // nothing but history (refused) and gets the refusal_error of not_proven;
  // a lease this owner no longer holds under its token throws its refusal
  // (gone, expired, other_token) and changes nothing (the next renewal
  // records the loss).
  virtual void note_leftovers(const LeftoversNote& note) = 0;

  // Undoes one re-entry of each resource, removing the lease at depth zero.
  // Throws the refusal_error of the first resource this owner does not hold
  // (or, forced, that nobody holds), after releasing the others. A lease found
  // expired is removed, recorded as expired, and refused as `expired`.
  virtual std::vector<Released> release(const ReleaseRequest& request) = 0;

  // Declares (or updates) the expected period of each resource, on the
  // database's clock: one short transaction that decides nothing about who
  // runs and writes nothing when the period is already the one stored.
  // Throws unavailable like the other calls.
  virtual void expect_runs(const Expectation& expectation) = 0;
  // The expected resources under the query's filters, with their successes.
  virtual ExpectedRuns expected_runs(const ExpectedQuery& query) = 0;

  virtual Snapshot status(const StatusQuery& query) = 0;
  virtual std::vector<HistoryEvent> history(const HistoryQuery& query) = 0;
  virtual GcReport gc(const GcOptions& options) = 0;

  // Creates or migrates the schema (clock init) and says what this process
  // changed, its own first use included. Commands call it lazily.
  virtual MigrationReport migrate() = 0;

  // How long a connection to the backend stays open after a call before
  // rest() closes it; none where nothing is held open between calls (SQLite).
  virtual std::optional<milliseconds> idle_limit() const { return std::nullopt; }

  // Closes what has been idle for idle_limit() or longer; the next call
  // reopens it. A holder calls it between renewals (man clock, COMMANDS: connections are
  // borrowed, not held).
  virtual void rest() {}

  // Work the store may do while its caller waits on something else (clock
  // run, while the command runs, before the heartbeat starts), so that it is
  // not paid later on a path someone waits for: SQLite checkpoints a long
  // WAL. Only called while no other call is in progress. Never throws.
  virtual void use_idle_time() noexcept {}

  // Whether the process may end without closing the store, once its last
  // call has returned: SQLite's commits are in the file, and closing it,
  // freeing and destructors are work the kernel does at exit anyway. A
  // server connection is closed properly, as PostgreSQL and pgbouncer expect.
  virtual bool may_exit_without_closing() const { return false; }

  // What an operator should know about how the database is set up (clock
  // init and clock status -v print each as a warning): one line each, none
  // when all is well or when the backend cannot tell. Never throws.
  virtual std::vector<std::string> setup_warnings() = 0;

  // What `clock run` needs of the database that this login lacks (clock
  // check): one line each, naming the fix; empty when nothing is missing or
  // the backend grants by file mode (SQLite). Throws like status() when the
  // backend cannot be asked.
  virtual std::vector<std::string> missing_run_privileges() { return {}; }

  // One line naming the routines kept only for releases older than this
  // one's previous, which clock init drops (docs/upgrades.md); none when
  // there are none or this login may not tell. clock check shows it.
  virtual std::vector<std::string> retired_routines() { return {}; }
};

}  // namespace clk::store
