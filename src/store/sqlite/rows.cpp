// Row mapping for the SQLite store.
#include "store/sqlite/rows.hpp"

#include "store/leftovers_json.hpp"

namespace clk::store::sqlite {

lock::Instant instant_of(std::int64_t ms) {
  return lock::instant_since_epoch<std::chrono::milliseconds>(ms);
}

std::int64_t ms_of(lock::Instant instant) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(instant.time_since_epoch()).count();
}

namespace {

lock::Mode mode_of(const std::string& text) {
  return lock::parse_mode(text).value_or(lock::Mode::exclusive);
}

}  // namespace

LeaseRow read_lease(const Statement& row) {
  LeaseRow out{lock::Lease{
                   .ns = row.text(0),
                   .resource = lock::Resource::parse(row.text(1)),
                   .owner = lock::OwnerId::trusted(row.text(2)),
                   .info = {},
                   .mode = mode_of(row.text(3)),
                   .slots = static_cast<int>(row.integer(4)),
                   .token = row.integer(5),
                   .depth = static_cast<int>(row.integer(6)),
                   .acquired_at = instant_of(row.integer(7)),
                   .renewed_at = instant_of(row.integer(8)),
                   .expires_at = std::nullopt,
                   .leftovers = {},
               },
               row.text(16)};
  if (auto expires = row.optional_integer(9))
    out.lease.expires_at = instant_of(*expires);
  out.lease.info = {row.text(10), row.text(11), row.integer(12),
                    row.text(13), row.text(14), instant_of(row.integer(15)),
                    row.text(17)};
  out.lease.leftovers = decode_leftovers(row.text(18));
  return out;
}

WaiterRow read_waiter(const Statement& row) {
  WaiterRow out{lock::Waiter{
                    .ns = row.text(0),
                    .resource = lock::Resource::parse(row.text(1)),
                    .owner = lock::OwnerId::trusted(row.text(2)),
                    .info = {row.text(7), row.text(8), row.integer(9), row.text(10), row.text(11),
                             instant_of(row.integer(12)), row.text(15)},
                    .mode = mode_of(row.text(3)),
                    .slots = static_cast<int>(row.integer(4)),
                    .position = row.integer(5),
                    .since = instant_of(row.integer(6)),
                },
                row.text(13), row.integer(14)};
  return out;
}

RunCount read_run_count(const Statement& row) {
  return {.ns = row.text(0),
          .resource = lock::Resource::parse(row.text(1)),
          .outcome = event_kind_of(row.text(2)).value_or(EventKind::acquired),
          .count = row.integer(3)};
}

RunResults read_run_results(const Statement& row) {
  RunResults out{.ns = row.text(0),
                 .resource = lock::Resource::parse(row.text(1)),
                 .succeeded = row.integer(2),
                 .failed = row.integer(3),
                 .last_exit = {},
                 .last_held_for = std::chrono::milliseconds(row.integer(7)),
                 .last_ended = instant_of(row.integer(4))};
  if (auto code = row.optional_integer(5))
    out.last_exit.code = static_cast<int>(*code);
  else
    out.last_exit.signal = static_cast<int>(row.optional_integer(6).value_or(0));
  return out;
}

HistoryEvent read_history(const Statement& row) {
  HistoryEvent event{.id = row.integer(0),
                     .at = instant_of(row.integer(1)),
                     .kind = event_kind_of(row.text(2)).value_or(EventKind::acquired),
                     .ns = row.text(3),
                     .resource = lock::Resource::parse(row.text(4)),
                     .owner = lock::OwnerId::trusted(row.text(5)),
                     .info = {row.text(9),
                              row.text(10),
                              row.integer(11),
                              row.text(12),
                              row.text(13),
                              {},
                              row.text(19)},
                     .mode = mode_of(row.text(6)),
                     .token = row.integer(7),
                     .held_for = std::nullopt,
                     .by = row.text(14),
                     .in_the_way = std::nullopt,
                     .done_by = std::nullopt,
                     .leftovers = {},
                     .exit = std::nullopt,
                     .every = std::nullopt,
                     .previous_every = std::nullopt};
  event.leftovers = decode_leftovers(row.text(20));
  if (auto code = row.optional_integer(21))
    event.exit = RunExit{static_cast<int>(*code), 0};
  else if (auto signal = row.optional_integer(22))
    event.exit = RunExit{std::nullopt, static_cast<int>(*signal)};
  if (auto held = row.optional_integer(8))
    event.held_for = std::chrono::milliseconds(*held);
  if (auto every = row.optional_integer(23))
    event.every = std::chrono::milliseconds(*every);
  if (auto previous = row.optional_integer(24))
    event.previous_every = std::chrono::milliseconds(*previous);
  // A run whose period was done names that run where a busy one names the holder.
  if (!row.is_null(15) && !row.is_null(18)) {
    event.done_by = PeriodRun{event.resource, lock::OwnerId::trusted(row.text(15)), row.text(16),
                              row.optional_integer(17).value_or(0), instant_of(row.integer(18))};
  } else if (!row.is_null(15)) {
    event.in_the_way =
        InTheWay{lock::OwnerId::trusted(row.text(15)), row.text(16), row.optional_integer(17)};
  }
  return event;
}

}  // namespace clk::store::sqlite
