// JSON replies → Store types. Field names follow lease_json() and
// waiter_json() of sql/postgres/functions/10_util.sql and the functions of
// 20_acquire.sql … 40_status_gc.sql, which MariaDB's procedures
// (sql/mariadb/procedures) reply with too.
#include "store/server/json_replies.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <tuple>

#include <nlohmann/json.hpp>

#include "error.hpp"
#include "store/leftovers_json.hpp"

namespace clk::store {

namespace {

// A waiter for several resources has an entry in each of their queues.
int waiters_counted_by_owner(const std::vector<lock::Waiter>& entries) {
  std::vector<std::string> owners;
  owners.reserve(entries.size());
  for (const auto& entry : entries)
    owners.push_back(entry.owner.str());
  std::sort(owners.begin(), owners.end());
  return static_cast<int>(std::unique(owners.begin(), owners.end()) - owners.begin());
}

using nlohmann::json;

json parse(const std::string& text) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw Error(ExitCode::internal,
                std::string("unreadable reply from the database server: ") + e.what());
  }
}

// Runs `read` and turns a missing or mistyped field into an internal error.
template <typename Read>
auto reading(const std::string& text, Read read) {
  json reply = parse(text);
  try {
    return read(reply);
  } catch (const json::exception& e) {
    throw Error(ExitCode::internal,
                std::string("unexpected reply from the database server: ") + e.what());
  }
}

std::string text_of(const json& value) {
  return value.is_null() ? "" : value.get<std::string>();
}

std::int64_t integer_of(const json& value) {
  return value.is_null() ? 0 : value.get<std::int64_t>();
}

lock::Instant instant_of(const json& value) {
  return lock::instant_since_epoch<std::chrono::microseconds>(integer_of(value));
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
  if (row.contains("db_user"))
    info.db_user = text_of(row.at("db_user"));
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
          .expires_at = optional_instant_of(row.at("expires_at")),
          .leftovers = {}};
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

// The reasons of sql/postgres/functions/30_renew_release.sql and
// 20_acquire.sql, as the Store's vocabulary.
Refusal refusal_of(const std::string& reason) {
  static constexpr std::pair<std::string_view, Refusal> k_reasons[] = {
      {"gone", Refusal::gone},         {"expired", Refusal::expired},
      {"token", Refusal::other_token}, {"other_owner", Refusal::other_owner},
      {"not_held", Refusal::not_held}, {"slots_mismatch", Refusal::slots_mismatch},
      {"upgrade", Refusal::upgrade},   {"not_proven", Refusal::not_proven},
  };
  for (const auto& [name, refusal] : k_reasons) {
    if (name == reason)
      return refusal;
  }
  throw Error(ExitCode::internal, "unknown refusal '" + reason + "' from the database server");
}

std::vector<Refused> refusals_of(const json& list) {
  std::vector<Refused> out;
  for (const auto& item : list) {
    out.push_back({refusal_of(text_of(item.at("reason"))),
                   lock::Resource::parse(text_of(item.at("resource")))});
  }
  return out;
}

// find_cycle_links() of 20_acquire.sql: [{owner, host, resource}…], the requester first.
Cycle cycle_of(const json& links) {
  Cycle cycle;
  for (const auto& link : links) {
    const auto& host = link.at("host");
    cycle.push_back({lock::OwnerId::trusted(text_of(link.at("owner"))),
                     host.is_null() ? std::string() : text_of(host),
                     lock::Resource::parse(text_of(link.at("resource")))});
  }
  return cycle;
}

// An exit code, else a signal; none when the record has neither.
std::optional<RunExit> run_exit_of(const json& code, const json& signal) {
  if (!code.is_null())
    return RunExit{static_cast<int>(integer_of(code)), 0};
  if (!signal.is_null())
    return RunExit{std::nullopt, static_cast<int>(integer_of(signal))};
  return std::nullopt;
}

EventKind kind_of(const std::string& event) {
  if (auto kind = event_kind_of(event))
    return *kind;
  throw Error(ExitCode::internal, "unknown history event '" + event + "' from the database server");
}

// history(): {"owner", "host", "token"} of who was in the way, or null.
std::optional<InTheWay> in_the_way_of(const json& row) {
  auto found = row.find("in_the_way");
  if (found == row.end() || found->is_null())
    return std::nullopt;
  const auto& token = found->at("token");
  return InTheWay{lock::OwnerId::trusted(text_of(found->at("owner"))), text_of(found->at("host")),
                  token.is_null() ? std::nullopt : std::optional(integer_of(token))};
}

// {"owner", "host", "token", "started"} of the run that did a --once-per
// period (try_acquire's "done_by", history's), for `resource`.
PeriodRun period_run_of(const json& run, const lock::Resource& resource) {
  return PeriodRun{resource, lock::OwnerId::trusted(text_of(run.at("owner"))),
                   text_of(run.at("host")), integer_of(run.at("token")),
                   instant_of(run.at("started"))};
}

// history(): the run that did the period of a skipped --once-per run, or null.
std::optional<PeriodRun> done_by_of(const json& row, const lock::Resource& resource) {
  auto found = row.find("done_by");
  if (found == row.end() || found->is_null())
    return std::nullopt;
  return period_run_of(*found, resource);
}

}  // namespace

// The time from the reply's "now" to the first expiry among the leases and
// queue entries in the way (schema 5 and later give the entries' expiry).
static std::optional<std::chrono::microseconds> next_expiry_in(const json& reply) {
  std::optional<std::int64_t> first;
  for (const char* kind : {"leases", "waiters"}) {
    for (const auto& row : reply.at(kind)) {
      auto expires = row.find("expires_at");
      if (expires == row.end() || expires->is_null())
        continue;
      first = std::min(first.value_or(expires->get<std::int64_t>()), expires->get<std::int64_t>());
    }
  }
  if (!first)
    return std::nullopt;
  // An expiry further away than the longest TTL (a lease stored before --ttl
  // had a cap, up to year 294276) is looked at again after that TTL: a wait
  // on the steady clock cannot reach it without overflowing.
  const std::int64_t in = std::max<std::int64_t>(0, *first - integer_of(reply.at("now")));
  return std::min(std::chrono::microseconds(in),
                  std::chrono::duration_cast<std::chrono::microseconds>(lock::k_max_ttl));
}

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
      out.next_expiry_in = next_expiry_in(reply);
      if (auto ahead = reply.find("ahead"); ahead != reply.end())
        out.attempt.waiters_ahead = static_cast<int>(integer_of(*ahead));
      out.ahead = out.attempt.waiters_ahead.value_or(
          waiters_counted_by_owner(out.attempt.blocking_waiters));
      auto mine = reply.find("mine");
      if (mine != reply.end() && !mine->is_null())
        out.mine = integer_of(*mine);
    } else if (outcome == "done") {
      const auto& run = reply.at("done_by");
      out.attempt.outcome = Outcome::done;
      out.attempt.done_by = period_run_of(run, lock::Resource::parse(text_of(run.at("resource"))));
    } else if (outcome == "deadlock") {
      out.attempt.outcome = Outcome::deadlock;
      out.attempt.cycle = cycle_of(reply.at("cycle"));
    } else if (outcome == "not_proven") {
      out.refused =
          Refused{Refusal::not_proven, lock::Resource::parse(text_of(reply.at("resource")))};
    } else if (outcome == "slots_mismatch" || outcome == "upgrade") {
      out.refused =
          Refused{refusal_of(outcome), lock::Resource::parse(text_of(reply.at("resource"))),
                  static_cast<int>(integer_of(reply.at("slots"))),
                  static_cast<int>(integer_of(reply.at("other_slots")))};
    } else {
      throw Error(ExitCode::internal, "unknown try_acquire outcome '" + outcome + "'");
    }
    return out;
  });
}

std::vector<Refused> parse_renew(const std::string& text) {
  return reading(text, [](const json& reply) {
    auto outcome = text_of(reply.at("outcome"));
    if (outcome == "renewed" || outcome == "noted")
      return std::vector<Refused>{};
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
                         .by = text_of(row.at("by")),
                         .in_the_way = in_the_way_of(row),
                         .done_by = std::nullopt,
                         .leftovers = {},
                         .exit = std::nullopt,
                         .every = std::nullopt,
                         .previous_every = std::nullopt};
      event.done_by = done_by_of(row, event.resource);
      if (row.contains("leftovers"))
        event.leftovers = leftovers_of(row.at("leftovers"));
      event.exit = run_exit_of(row.value("exit_code", json()), row.value("exit_signal", json()));
      if (row.contains("every_ms") && !row.at("every_ms").is_null())
        event.every = milliseconds(integer_of(row.at("every_ms")));
      if (row.contains("previous_every_ms") && !row.at("previous_every_ms").is_null())
        event.previous_every = milliseconds(integer_of(row.at("previous_every_ms")));
      events.push_back(std::move(event));
    }
    return events;
  });
}

std::vector<RunResults> parse_run_results(const std::string& text) {
  return reading(text, [](const json& reply) {
    std::vector<RunResults> results;
    for (const auto& row : reply) {
      results.push_back(
          {.ns = text_of(row.at("namespace")),
           .resource = lock::Resource::parse(text_of(row.at("resource"))),
           .succeeded = integer_of(row.at("succeeded")),
           .failed = integer_of(row.at("failed")),
           .last_exit = run_exit_of(row.at("last_exit_code"), row.at("last_exit_signal"))
                            .value_or(RunExit{}),
           .last_held_for = milliseconds(integer_of(row.at("last_held_for_ms"))),
           .last_ended = instant_of(row.at("last_ended"))});
    }
    return results;
  });
}

GcReport parse_gc(const std::string& text) {
  return reading(text, [](const json& reply) {
    return GcReport{integer_of(reply.at("expired_leases")), integer_of(reply.at("dead_waiters")),
                    integer_of(reply.at("history_rows")),
                    integer_of(reply.value("idle_counters", json()))};
  });
}

std::optional<HolderTrace> parse_holder_trace(const std::string& text) {
  if (text.empty())
    return std::nullopt;
  return reading(text, [](const json& reply) -> std::optional<HolderTrace> {
    if (reply.is_null() || reply.at("boot_id").is_null())
      return std::nullopt;
    return HolderTrace{text_of(reply.at("boot_id")),      integer_of(reply.at("pid_ns")),
                       integer_of(reply.at("pid")),       integer_of(reply.at("pid_start")),
                       integer_of(reply.at("job_group")), text_of(reply.at("job_cgroup"))};
  });
}

std::optional<std::string> holder_trace_json(const std::optional<HolderTrace>& trace) {
  if (!trace)
    return std::nullopt;
  json object{{"boot_id", trace->boot_id},
              {"pid_ns", trace->pid_ns},
              {"pid_start", trace->pid_start},
              {"job_group", trace->job_group},
              {"job_cgroup", trace->job_cgroup}};
  try {
    return object.dump();
  } catch (const json::type_error&) {
    // A cgroup path that is not UTF-8 cannot be sent as it is, and one
    // changed would name another: no trace, the lease waits for its TTL.
    return std::nullopt;
  }
}

}  // namespace clk::store
