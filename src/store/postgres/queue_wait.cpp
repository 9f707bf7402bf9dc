// See queue_wait.hpp.
#include "store/postgres/queue_wait.hpp"

#include <algorithm>
#include <thread>

#include <spdlog/spdlog.h>

namespace clk::store::postgres {

using namespace std::chrono;

QueueWait::QueueWait(Connection& conn, std::string channel)
    : m_conn(conn), m_channel(std::move(channel)) {}

// What the last blocked attempt said about when to look again without
// being told: the earliest expiry of a lease or queue entry in the way, how
// many queue entries are ahead of this waiter's (counted up to a bound),
// and where the first of them and this waiter's own stand (positions): how
// far back it is, and from the last look, how fast the queue moves.
void QueueWait::blocked_until(std::optional<steady_clock::time_point> next_expiry,
                              std::string owner, std::optional<int> ahead,
                              std::optional<std::int64_t> mine, std::optional<std::int64_t> front) {
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
void QueueWait::wait_for_change(steady_clock::time_point until) {
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
  if (m_conn.listening() && !m_conn.notified_directly()) {
    std::uniform_int_distribution<int> poll_ms(40, 60);
    slice = std::min<steady_clock::duration>(slice, milliseconds(poll_ms(m_random)));
  }
  // The first call on a connection LISTENs and returns at once: look again.
  m_conn.await(m_channel, m_owner, slice);
}

// Whether a waiter beyond the first three keeps its connection: among the
// first eight, where notifications arrive, while the queue moves (its
// first entry changed within the last second, or this waiter has not yet
// seen it stand still).
bool QueueWait::listens_while_moving(steady_clock::time_point now) const {
  return m_notified && m_ahead < k_listeners_while_moving && now - m_front_since < k_standing_still;
}

// How many entries may be ahead of a waiter that keeps its connection:
// two where notifications arrive (the first three listen), none through a
// pooler (only the first polls). Until a LISTEN has told which, taken as
// direct, so that the second and third waiters connect and find out.
int QueueWait::listeners_ahead() {
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
steady_clock::duration QueueWait::pace() {
  const int ahead = std::max(1, m_ahead);
  // Past the count's bound, how far back in positions.
  const int far = std::max(1, waiters_ahead(m_ahead, m_mine, m_front));
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

}  // namespace clk::store::postgres
