// See waiting_pace.hpp.
#include "store/mariadb/waiting_pace.hpp"

#include <algorithm>
#include <set>
#include <string>

namespace clk::store::mariadb {

using namespace std::chrono;

void WaitingPace::blocked(const Attempt& attempt, std::optional<std::int64_t> mine,
                          std::optional<microseconds> next_expiry_in) {
  int ahead = 0;
  if (attempt.waiters_ahead) {
    ahead = *attempt.waiters_ahead;
  } else {
    // A waiter for several resources has an entry in each of their queues.
    std::set<std::string> owners;
    for (const auto& waiter : attempt.blocking_waiters)
      owners.insert(waiter.owner.str());
    ahead = static_cast<int>(owners.size());
  }
  std::optional<std::int64_t> front;
  if (!attempt.blocking_waiters.empty())
    front = attempt.blocking_waiters.front().position;
  ahead = waiters_ahead(ahead, mine, front);
  m_unmoved = front && front == m_front ? m_unmoved + 1 : 0;
  m_front = front;
  m_ahead = ahead;
  if (ahead > 0)
    m_first_since.reset();
  else if (!m_first_since)
    m_first_since = Clock::now();
  m_next_expiry.reset();
  if (next_expiry_in)
    m_next_expiry = Clock::now() + *next_expiry_in + milliseconds(20);
}

WaitingPace::Clock::duration WaitingPace::next_look(Clock::time_point now) {
  Clock::duration wait;
  if (m_ahead == 0) {
    const bool quick = m_first_since && now - *m_first_since < k_quick_for;
    std::uniform_int_distribution<int> poll(
        static_cast<int>((quick ? k_quick_least : k_first_least).count()),
        static_cast<int>((quick ? k_quick_most : k_first_most).count()));
    wait = milliseconds(poll(m_random));
  } else {
    milliseconds base = k_step * m_ahead;
    for (int i = 0; i < m_unmoved && base < k_cap * m_ahead; ++i)
      base *= 2;
    base = std::min(base, k_cap * m_ahead);
    std::uniform_real_distribution<double> jitter(0.75, 1.25);
    wait = duration_cast<milliseconds>(base * jitter(m_random));
  }
  // What is in the way may expire sooner: look then.
  if (m_next_expiry)
    wait = std::min<Clock::duration>(
        wait, std::max<Clock::duration>(*m_next_expiry - now, milliseconds(10)));
  return wait;
}

}  // namespace clk::store::mariadb
