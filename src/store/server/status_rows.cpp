// Reading status rows: see status_rows.hpp.
#include "store/server/status_rows.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <tuple>

#include "error.hpp"
#include "store/leftovers_json.hpp"
#include "store/server/row_view.hpp"

namespace clk::store {

namespace {

// The columns of status_rows() in sql/postgres/functions/40_status_gc.sql
// and of clock_status_rows in sql/mariadb/procedures/40_status_gc.sql.
enum StatusColumn {
  k_kind,
  k_namespace,
  k_resource,
  k_owner,
  k_mode,
  k_slots,
  k_token,
  k_depth,
  k_at1,
  k_at2,
  k_at3,
  k_expired,
  k_host,
  k_ip,
  k_pid,
  k_user,
  k_command,
  k_started,
  k_db_user,
  k_leftovers,
};

// Days from 1970-01-01 to a date of the proleptic Gregorian calendar
// (H. Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

[[noreturn]] void unreadable_instant(const char* text) {
  throw Error(ExitCode::internal,
              std::string("unreadable instant from the database server: ") + text);
}

// "YYYY-MM-DD HH:MM:SS[.ffffff]", UTC, as status_rows() writes it. The year
// has more digits past 9999, which PostgreSQL stores (a lease taken before
// --ttl had a cap): such an instant reads as the latest one clock can hold.
lock::Instant parse_utc(const char* text) {
  const std::size_t length = std::strlen(text);
  auto number = [&](std::size_t at, std::size_t digits) {
    std::int64_t value = 0;
    for (std::size_t i = 0; i < digits; ++i) {
      char c = at + i < length ? text[at + i] : 'x';
      if (c < '0' || c > '9')
        unreadable_instant(text);
      value = value * 10 + (c - '0');
    }
    return value;
  };
  const char* first_dash = std::strchr(text, '-');
  const std::size_t year_digits = first_dash ? static_cast<std::size_t>(first_dash - text) : 0;
  if (year_digits > 4 && year_digits <= 6) {
    number(0, year_digits);  // a year past 9999, or not a year at all
    return lock::Instant::max();
  }
  if (length < 19 || text[4] != '-' || text[7] != '-' || text[10] != ' ' || text[13] != ':' ||
      text[16] != ':') {
    unreadable_instant(text);
  }
  const std::int64_t year = number(0, 4);
  const auto days = days_from_civil(year, static_cast<unsigned>(number(5, 2)),
                                    static_cast<unsigned>(number(8, 2)));
  const auto seconds = days * 86400 + number(11, 2) * 3600 + number(14, 2) * 60 + number(17, 2);
  std::int64_t micros = 0;
  if (length > 20 && text[19] == '.') {
    const std::size_t digits = std::min<std::size_t>(length - 20, 6);
    micros = number(20, digits);
    for (std::size_t i = digits; i < 6; ++i)
      micros *= 10;
  }
  return lock::instant_since_epoch<std::chrono::microseconds>(seconds * 1'000'000 + micros);
}

std::string text_at(const RowView& row, int column) {
  const char* value = row.at(column);
  return value ? value : "";
}

EventKind outcome_at(const RowView& row) {
  const std::string name = text_at(row, k_mode);
  if (auto kind = event_kind_of(name))
    return *kind;
  throw Error(ExitCode::internal, "unknown run outcome '" + name + "' from the database server");
}

std::int64_t integer_at(const RowView& row, int column) {
  const char* value = row.at(column);
  return value ? std::strtoll(value, nullptr, 10) : 0;
}

// Integer microseconds since 1970 UTC, as MariaDB's procedures write them.
lock::Instant parse_microseconds(const char* text) {
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE)
    unreadable_instant(text);
  return lock::instant_since_epoch<std::chrono::microseconds>(value);
}

lock::Instant instant_at(const RowView& row, int column, InstantFormat format) {
  const char* value = row.at(column);
  if (!value)
    return lock::Instant{};
  return format == InstantFormat::utc_text ? parse_utc(value) : parse_microseconds(value);
}

lock::OwnerInfo info_at(const RowView& row, InstantFormat format) {
  lock::OwnerInfo info;
  info.host = text_at(row, k_host);
  info.ip = text_at(row, k_ip);
  info.pid = integer_at(row, k_pid);
  info.user = text_at(row, k_user);
  info.command = text_at(row, k_command);
  if (row.at(k_started))
    info.started = instant_at(row, k_started, format);
  info.db_user = text_at(row, k_db_user);
  return info;
}

}  // namespace

void StatusRows::add(const RowView& row) {
  const std::string kind = text_at(row, k_kind);
  if (kind == "now") {
    m_snapshot.now = instant_at(row, k_at1, m_format);
    return;
  }
  lock::Mode mode = lock::parse_mode(text_at(row, k_mode)).value_or(lock::Mode::exclusive);
  if (kind == "holder") {
    std::optional<lock::Instant> expires;
    if (row.at(k_at3))
      expires = instant_at(row, k_at3, m_format);
    m_snapshot.holders.push_back({.ns = text_at(row, k_namespace),
                                  .resource = lock::Resource::parse(text_at(row, k_resource)),
                                  .owner = lock::OwnerId::trusted(text_at(row, k_owner)),
                                  .info = info_at(row, m_format),
                                  .mode = mode,
                                  .slots = static_cast<int>(integer_at(row, k_slots)),
                                  .token = integer_at(row, k_token),
                                  .depth = static_cast<int>(integer_at(row, k_depth)),
                                  .acquired_at = instant_at(row, k_at1, m_format),
                                  .renewed_at = instant_at(row, k_at2, m_format),
                                  .expires_at = expires,
                                  .leftovers = {}});
    if (row.at(k_leftovers))
      m_snapshot.holders.back().leftovers = decode_leftovers(text_at(row, k_leftovers));
    // PostgreSQL's boolean as text ('t'), MariaDB's as a number (1).
    const std::string expired = text_at(row, k_expired);
    m_snapshot.holder_expired.push_back(expired == "t" || expired == "1");
  } else if (kind == "waiter") {
    m_snapshot.waiters.push_back({.ns = text_at(row, k_namespace),
                                  .resource = lock::Resource::parse(text_at(row, k_resource)),
                                  .owner = lock::OwnerId::trusted(text_at(row, k_owner)),
                                  .info = info_at(row, m_format),
                                  .mode = mode,
                                  .slots = static_cast<int>(integer_at(row, k_slots)),
                                  .position = integer_at(row, k_token),
                                  .since = instant_at(row, k_at1, m_format)});
  } else if (kind == "runs") {
    m_snapshot.run_counts.push_back({.ns = text_at(row, k_namespace),
                                     .resource = lock::Resource::parse(text_at(row, k_resource)),
                                     .outcome = outcome_at(row),
                                     .count = integer_at(row, k_token)});
  } else {
    throw Error(ExitCode::internal, "unknown status row kind '" + kind + "'");
  }
}

Snapshot StatusRows::take() {
  // As status() ordered them: holders by namespace, resource (byte order, as
  // COLLATE "C") and grant time; waiters in queue order; run counts by
  // namespace, resource and outcome name.
  auto& holders = m_snapshot.holders;
  std::vector<std::size_t> order(holders.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto& x = holders[a];
    const auto& y = holders[b];
    if (x.ns != y.ns)
      return x.ns < y.ns;
    if (x.resource.str() != y.resource.str())
      return x.resource.str() < y.resource.str();
    return x.acquired_at < y.acquired_at;
  });
  Snapshot sorted;
  sorted.now = m_snapshot.now;
  sorted.holders.reserve(order.size());
  for (auto i : order) {
    sorted.holders.push_back(std::move(holders[i]));
    sorted.holder_expired.push_back(m_snapshot.holder_expired[i]);
  }
  sorted.waiters = std::move(m_snapshot.waiters);
  std::sort(sorted.waiters.begin(), sorted.waiters.end(),
            [](const lock::Waiter& a, const lock::Waiter& b) { return a.position < b.position; });
  sorted.run_counts = std::move(m_snapshot.run_counts);
  std::sort(sorted.run_counts.begin(), sorted.run_counts.end(),
            [](const RunCount& a, const RunCount& b) {
              return std::tuple(a.ns, a.resource.str(), to_string(a.outcome)) <
                     std::tuple(b.ns, b.resource.str(), to_string(b.outcome));
            });
  m_snapshot = {};
  return sorted;
}

}  // namespace clk::store
