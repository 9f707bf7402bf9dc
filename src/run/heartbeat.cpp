// The renewal thread: its schedule, its retries, and how it reports to the
// main loop (an eventfd, since the main loop sleeps in poll()).
#include "run/heartbeat.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <pthread.h>
#include <random>
#include <sys/eventfd.h>
#include <system_error>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "error.hpp"
#include "run/signals.hpp"
#include "run/timing.hpp"
#include "util/duration.hpp"
#include "util/random_seed.hpp"

namespace clk::run {

Heartbeat::Heartbeat(const Renew& renew, milliseconds interval, time_point first_renewal_start)
    : m_renew(renew), m_interval(interval), m_last_renewal_start(first_renewal_start) {
  m_news_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (m_news_fd < 0) {
    throw Error(ExitCode::internal,
                "cannot create the heartbeat's eventfd: " + std::generic_category().message(errno));
  }
  try {
    m_thread = std::thread([this] { run(); });
  } catch (...) {
    close(m_news_fd);
    throw;
  }
}

Heartbeat::~Heartbeat() {
  stop();
  close(m_news_fd);
}

void Heartbeat::request_stop() {
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
  }
  m_wake.notify_all();
}

void Heartbeat::stop() {
  request_stop();
  if (m_thread.joinable())
    m_thread.join();
}

void Heartbeat::clear_news() {
  std::uint64_t count;
  [[maybe_unused]] auto ignored = read(m_news_fd, &count, sizeof count);
}

Heartbeat::time_point Heartbeat::last_renewal_start() const {
  std::lock_guard lock(m_mutex);
  return m_last_renewal_start;
}

bool Heartbeat::lost() const {
  std::lock_guard lock(m_mutex);
  return m_lost;
}

void Heartbeat::announce() {
  std::uint64_t one = 1;
  [[maybe_unused]] auto ignored = write(m_news_fd, &one, sizeof one);
}

RenewOutcome Heartbeat::attempt() {
  try {
    return m_renew();
  } catch (const Error& error) {
    if (error.code() == ExitCode::not_owner)
      return RenewOutcome::lost;
    spdlog::warn("lease renewal failed: {}", error.what());
  } catch (const std::exception& error) {
    spdlog::warn("lease renewal failed: {}", error.what());
  } catch (...) {
    spdlog::warn("lease renewal failed with an unknown error");
  }
  return RenewOutcome::unavailable;
}

void Heartbeat::run() {
  // Signals for clock belong to the main loop, not to a renewal in flight.
  sigset_t relayed = relayed_signal_set();
  pthread_sigmask(SIG_BLOCK, &relayed, nullptr);
  std::mt19937 random(util::random_seed());
  std::uniform_real_distribution<double> jitter(0.5, 1.0);
  int failures = 0;

  std::unique_lock lock(m_mutex);
  time_point next = m_last_renewal_start + m_interval;
  for (;;) {
    if (m_wake.wait_until(lock, next, [this] { return m_stopping; }))
      return;
    lock.unlock();
    time_point start = std::chrono::steady_clock::now();
    RenewOutcome outcome = attempt();
    lock.lock();
    switch (outcome) {
      case RenewOutcome::renewed:
        // The server's lease runs from no earlier than this attempt's start.
        m_last_renewal_start = std::max(m_last_renewal_start, start);
        if (failures > 0)
          spdlog::info("lease renewed after {} failed attempts", failures);
        failures = 0;
        next = start + m_interval;
        announce();
        break;
      case RenewOutcome::lost:
        m_lost = true;
        announce();
        return;
      case RenewOutcome::unavailable: {
        ++failures;
        auto delay = retry_delay(failures, m_interval, jitter(random));
        spdlog::warn("cannot renew the lease (attempt {}); retrying in {}", failures,
                     util::format_duration(delay));
        next = std::chrono::steady_clock::now() + delay;
        break;
      }
    }
  }
}

}  // namespace clk::run
