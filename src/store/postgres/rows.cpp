// jsonb replies → Store types. Field names follow lease_json() and
// waiter_json() of sql/postgres/001_schema.sql and the functions of 002-004.
#include "store/postgres/rows.hpp"

#include <nlohmann/json.hpp>

#include "error.hpp"

namespace clk::store::postgres {

namespace {

using nlohmann::json;

json parse(const std::string& text) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw Error(ExitCode::internal, std::string("unreadable reply from PostgreSQL: ") + e.what());
  }
}

// Runs `read` and turns a missing or mistyped field into an internal error.
template <typename Read>
auto reading(const std::string& text, Read read) {
  json reply = parse(text);
  try {
    return read(reply);
  } catch (const json::exception& e) {
    throw Error(ExitCode::internal, std::string("unexpected reply from PostgreSQL: ") + e.what());
  }
}

std::string text_of(const json& value) {
  return value.is_null() ? "" : value.get<std::string>();
}

std::int64_t integer_of(const json& value) {
  return value.is_null() ? 0 : value.get<std::int64_t>();
}

lock::Instant instant_of(const json& value) {
  return lock::Instant(std::chrono::microseconds(integer_of(value)));
}

std::optional<lock::Instant> optional_instant_of(const json& value) {
  if (value.is_null())
    return std::nullopt;
  return instant_of(value);
}

lock::Mode mode_of(const json& value) {
  return lock::parse_mode(text_of(value)).value_or(lock::Mode::exclusive);
}

lock::OwnerInfo info_of(const json& row) {
  lock::OwnerInfo info;
  info.host = text_of(row.at("host"));
  info.ip = text_of(row.at("ip"));
  info.pid = integer_of(row.at("pid"));
  info.user = text_of(row.at("user"));
  info.command = text_of(row.at("command"));
  if (row.contains("started"))
    info.started = instant_of(row.at("started"));
  return info;
}

lock::Lease lease_of(const json& row) {
  return {.ns = text_of(row.at("namespace")),
          .resource = lock::Resource::parse(text_of(row.at("resource"))),
          .owner = lock::OwnerId::trusted(text_of(row.at("owner"))),
          .info = info_of(row),
          .mode = mode_of(row.at("mode")),
          .slots = static_cast<int>(integer_of(row.at("slots"))),
          .token = integer_of(row.at("token")),
          .depth = static_cast<int>(integer_of(row.at("depth"))),
          .acquired_at = instant_of(row.at("acquired_at")),
          .renewed_at = instant_of(row.at("renewed_at")),
          .expires_at = optional_instant_of(row.at("expires_at"))};
}

lock::Waiter waiter_of(const json& row) {
  return {.ns = text_of(row.at("namespace")),
          .resource = lock::Resource::parse(text_of(row.at("resource"))),
          .owner = lock::OwnerId::trusted(text_of(row.at("owner"))),
          .info = info_of(row),
          .mode = mode_of(row.at("mode")),
          .slots = static_cast<int>(integer_of(row.at("slots"))),
          .position = integer_of(row.at("position")),
          .since = instant_of(row.at("since"))};
}

std::vector<Refusal> refusals_of(const json& list) {
  std::vector<Refusal> out;
  for (const auto& item : list) {
    out.emplace_back(text_of(item.at("resource")), text_of(item.at("reason")));
  }
  return out;
}

EventKind kind_of(const std::string& event) {
  for (auto kind : {EventKind::acquired, EventKind::released, EventKind::expired, EventKind::forced,
                    EventKind::lost}) {
    if (to_string(kind) == event)
      return kind;
  }
  throw Error(ExitCode::internal, "unknown history event '" + event + "' from PostgreSQL");
}

}  // namespace

AcquireReply parse_acquire(const std::string& text) {
  return reading(text, [](const json& reply) {
    AcquireReply out;
    std::string outcome = text_of(reply.at("outcome"));
    if (outcome == "granted") {
      out.attempt.outcome = Outcome::granted;
      for (const auto& grant : reply.at("grants")) {
        out.attempt.grants.push_back({lock::Resource::parse(text_of(grant.at("resource"))),
                                      integer_of(grant.at("token")),
                                      static_cast<int>(integer_of(grant.at("depth")))});
      }
    } else if (outcome == "blocked") {
      out.attempt.outcome = Outcome::blocked;
      for (const auto& row : reply.at("leases"))
        out.attempt.blocking_leases.push_back(lease_of(row));
      for (const auto& row : reply.at("waiters")) {
        out.attempt.blocking_waiters.push_back(waiter_of(row));
      }
    } else if (outcome == "deadlock") {
      out.attempt.outcome = Outcome::deadlock;
      out.attempt.cycle = text_of(reply.at("cycle"));
    } else if (outcome == "slots_mismatch" || outcome == "upgrade") {
      out.refusal = outcome;
      out.resource = text_of(reply.at("resource"));
      out.slots = static_cast<int>(integer_of(reply.at("slots")));
      out.other_slots = static_cast<int>(integer_of(reply.at("other_slots")));
    } else {
      throw Error(ExitCode::internal, "unknown try_acquire outcome '" + outcome + "'");
    }
    return out;
  });
}

std::vector<Refusal> parse_renew(const std::string& text) {
  return reading(text, [](const json& reply) {
    if (text_of(reply.at("outcome")) == "renewed")
      return std::vector<Refusal>{};
    return refusals_of(reply.at("lost"));
  });
}

ReleaseReply parse_release(const std::string& text) {
  return reading(text, [](const json& reply) {
    ReleaseReply out;
    for (const auto& item : reply.at("released")) {
      Released released{lock::Resource::parse(text_of(item.at("resource"))), 0, 0};
      if (item.contains("remaining_depth")) {
        released.remaining_depth = static_cast<int>(integer_of(item.at("remaining_depth")));
        released.holders_removed = released.remaining_depth == 0 ? 1 : 0;
      } else {
        released.holders_removed = static_cast<int>(integer_of(item.at("holders_removed")));
      }
      out.released.push_back(std::move(released));
    }
    if (reply.contains("refused"))
      out.refused = refusals_of(reply.at("refused"));
    return out;
  });
}

Snapshot parse_status(const std::string& text) {
  return reading(text, [](const json& reply) {
    Snapshot snapshot;
    snapshot.now = instant_of(reply.at("now"));
    for (const auto& row : reply.at("holders")) {
      snapshot.holders.push_back(lease_of(row));
      snapshot.holder_expired.push_back(row.at("expired").get<bool>());
    }
    for (const auto& row : reply.at("waiters"))
      snapshot.waiters.push_back(waiter_of(row));
    return snapshot;
  });
}

std::vector<HistoryEvent> parse_history(const std::string& text) {
  return reading(text, [](const json& reply) {
    std::vector<HistoryEvent> events;
    for (const auto& row : reply) {
      std::optional<milliseconds> held_for;
      if (!row.at("held_for_ms").is_null())
        held_for = milliseconds(integer_of(row.at("held_for_ms")));
      HistoryEvent event{.id = integer_of(row.at("id")),
                         .at = instant_of(row.at("at")),
                         .kind = kind_of(text_of(row.at("event"))),
                         .ns = text_of(row.at("namespace")),
                         .resource = lock::Resource::parse(text_of(row.at("resource"))),
                         .owner = lock::OwnerId::trusted(text_of(row.at("owner"))),
                         .info = info_of(row),
                         .mode = mode_of(row.at("mode")),
                         .token = integer_of(row.at("token")),
                         .held_for = held_for,
                         .by = text_of(row.at("by"))};
      events.push_back(std::move(event));
    }
    return events;
  });
}

GcReport parse_gc(const std::string& text) {
  return reading(text, [](const json& reply) {
    return GcReport{integer_of(reply.at("expired_leases")), integer_of(reply.at("dead_waiters")),
                    integer_of(reply.at("history_rows"))};
  });
}

}  // namespace clk::store::postgres
