// What differs between the two server backends under the one server store
// (server_store.hpp): how a routine of the lock model is called and its
// arguments bound, how long a call keeps trying, how a waiter waits, when a
// connection rests, and the schema's first use and migrations. PostgreSQL
// (store/postgres/session.hpp) and MariaDB (store/mariadb/session.hpp)
// implement it; every operation of the lock model is written once, above it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "error.hpp"
#include "lock/lease.hpp"
#include "lock/owner.hpp"
#include "lock/resource.hpp"
#include "store/server/json_replies.hpp"
#include "store/server/row_view.hpp"
#include "store/server/status_rows.hpp"
#include "store/store.hpp"

namespace clk::store::server {

// How an argument is typed on the server. PostgreSQL casts its text
// parameters in the call (an untyped one takes the routine's own type, so a
// routine is found by name and arity); MariaDB binds integers as integers
// and lists as JSON arrays.
enum class ArgType {
  text,
  integer,  // the routine's own integer type (PostgreSQL: untyped)
  bigint,
  int4,  // PostgreSQL: integer, where a NULL must be typed to find the routine
  uuid,
  boolean,
  names,    // resource names: text[] / a JSON array
  numbers,  // tokens, pids: bigint[] / a JSON array
  json,     // jsonb / JSON text
  instant,  // microseconds since the Unix epoch: timestamptz / BIGINT
};

// One argument of a routine; std::monostate is SQL NULL.
struct Arg {
  ArgType type;
  std::variant<std::monostate, std::string, std::int64_t, bool, std::vector<std::string>,
               std::vector<std::int64_t>>
      value;
};
using Args = std::vector<Arg>;

Arg text(std::string value);
Arg text(const std::optional<std::string>& value);
Arg integer(std::int64_t value);
Arg integer(std::optional<std::int64_t> value);
Arg bigint(std::int64_t value);
Arg bigint(std::optional<std::int64_t> value);
Arg int4(std::optional<std::int64_t> value);
Arg uuid(const lock::OwnerId& owner);
Arg boolean(bool value);
Arg names(const std::vector<lock::Resource>& resources);
Arg numbers(const std::vector<std::int64_t>& values);
Arg json(const std::optional<std::string>& value);
Arg instant(lock::Instant value);  // the zero instant (unknown) as NULL

// Whether a call may be sent again after its connection dropped while it
// ran: `allowed` for a routine that does the same when sent twice (a grant
// by request id, a renewal, a read); `if_unsent` for one that must not (a
// release undoes a re-entry each time), which then throws OutcomeUnknown.
enum class Resend { allowed, if_unsent };

// A call sent with Resend::if_unsent whose reply was lost: it may or may
// not have taken effect. Exit code unavailable (69) unless said otherwise.
class OutcomeUnknown : public clk::Error {
 public:
  explicit OutcomeUnknown(std::string message)
      : clk::Error(ExitCode::unavailable, std::move(message)) {}
  using clk::Error::Error;
};

// The resources' hierarchy is locked by another program's open transaction
// past the routine's bounded wait: for an acquire, "held", not "server
// unavailable". where_to_look() names where the operator finds that session.
class HierarchyBusy : public clk::Error {
 public:
  HierarchyBusy(std::string message, std::string where_to_look)
      : clk::Error(ExitCode::unavailable, std::move(message)),
        m_where_to_look(std::move(where_to_look)) {}
  const std::string& where_to_look() const { return m_where_to_look; }

 private:
  std::string m_where_to_look;
};

// The login may not execute the routine: its role was granted before the
// routine existed (config, 78, when nobody falls back to an older one).
class NotGranted : public clk::Error {
 public:
  explicit NotGranted(std::string message) : clk::Error(ExitCode::config, std::move(message)) {}
};

class Session {
 public:
  using Clock = std::chrono::steady_clock;

  virtual ~Session() = default;

  // The one value routine `routine` (the lock model's name: "renew",
  // "release2"…) replies with, as text: its JSON, a count or a boolean. A
  // process's first call creates or migrates the schema where it is not
  // current. Throws clk::Error; OutcomeUnknown, HierarchyBusy and
  // NotGranted as above.
  virtual std::string call(std::string_view what, std::string_view routine, const Args& args,
                           Resend resend) = 0;
  // Every row routine `routine` returns, visited in order.
  virtual void each_row(std::string_view what, std::string_view routine, const Args& args,
                        const std::function<void(const RowView&)>& visit) = 0;
  // How the rows of status_rows write an instant.
  virtual InstantFormat instant_format() const = 0;

  // The calls that follow keep trying through server trouble until `until`.
  virtual void patience_until(Clock::time_point until) = 0;
  // An acquire attempt answers by the caller's deadline (and the attempt at
  // the deadline, which ends every wait, gets a second more).
  virtual void set_acquire_deadline(Clock::time_point deadline) = 0;
  virtual void one_acquire_attempt() = 0;
  // What the routines that grant or remove by expiry (try_acquire,
  // gc_batch) add to an expiry on this server, in milliseconds, after
  // refusing (78) where this server may not grant; none where they take no
  // such argument.
  virtual std::optional<std::int64_t> expiry_margin() = 0;

  // What a blocked attempt said, or that another transaction held the
  // hierarchy: what wait_for_change paces itself by.
  virtual void blocked(const AcquireReply& reply, const lock::OwnerId& owner) = 0;
  virtual void blocked_behind_transaction(const lock::OwnerId& owner) = 0;
  // Waits until a change may let the last blocked request in, or `until`.
  virtual void wait_for_change(Clock::time_point until) = 0;

  // A lease watch, where the server can tell a holder of a loss without a
  // round trip: whether `owner` may have lost a lease since the last look
  // (true without a watch), and how often to ask (none without one).
  virtual bool may_have_lost(const lock::OwnerId& owner) = 0;
  virtual std::optional<std::chrono::milliseconds> watch_interval() const = 0;

  virtual MigrationReport migrate() = 0;
  virtual std::chrono::milliseconds idle_limit() const = 0;
  // Closes a connection idle for idle_limit() (connections are borrowed).
  virtual void rest() = 0;
  virtual std::vector<std::string> setup_warnings() = 0;
  virtual std::vector<std::string> retired_routines() = 0;
  virtual std::vector<std::string> missing_run_privileges() = 0;
};

}  // namespace clk::store::server
