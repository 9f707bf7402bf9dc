// The renewal thread: its schedule, its retries, the checks between renewals,
// and how it reports to the main loop (an eventfd, since the main loop sleeps
// in poll()).
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

namespace {

using Clock = std::chrono::steady_clock;

// Why a renewal failed, in words an operator acts on; the store's own message
// (library details included) goes to the debug log.
std::string in_our_words(const Error& error) {
  switch (error.code()) {
    case ExitCode::unavailable:
      return "the database is unavailable";
    case ExitCode::local_database:
      return "the database file is unusable (read-only, full or damaged)";
    default:
      return error.what();
  }
}

}  // namespace

Heartbeat::Heartbeat(const RunOptions& options, const LeaseKeeping& lease,
                     time_point first_renewal_start)
    : m_options(options),
      m_lease(lease),
      m_last_renewal_start(first_renewal_start),
      m_last_held(first_renewal_start) {
  time_point now = Clock::now();
  bool checks = m_lease.still_holds && m_lease.check_interval;
  bool rests = m_lease.rest && m_lease.rest_after;
  m_first_check = checks ? now + *m_lease.check_interval : time_point::max();
  // The grant's connection is idle from the grant on.
  m_first_rest = rests ? now + *m_lease.rest_after : time_point::max();
  m_start_due = std::min({first_renewal_start + m_options.heartbeat, m_first_check, m_first_rest});
  m_news_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (m_news_fd < 0) {
    throw Error(ExitCode::internal,
                "cannot create the heartbeat's eventfd: " + std::generic_category().message(errno));
  }
}

std::optional<Heartbeat::time_point> Heartbeat::start_due() const {
  if (m_started)
    return std::nullopt;
  return m_start_due;
}

void Heartbeat::start() {
  if (m_started)
    return;
  m_thread = std::thread([this] { run(); });
  m_started = true;
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
  m_started = true;  // a stopped heartbeat never starts
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

Heartbeat::time_point Heartbeat::last_held() const {
  std::lock_guard lock(m_mutex);
  return m_last_held;
}

bool Heartbeat::lost() const {
  std::lock_guard lock(m_mutex);
  return m_lost;
}

void Heartbeat::note_leftovers(std::vector<lock::Leftover> leftovers) {
  if (!m_lease.note_leftovers)
    return;
  {
    std::lock_guard lock(m_mutex);
    m_note = std::move(leftovers);
    m_note_due = true;
    m_note_failed = false;
  }
  m_wake.notify_all();
}

// Writes the pending note; it is a courtesy to `clock status` (the release
// records the final list anyway), so a failure is only logged, and the note
// tried again after the next renewal.
void Heartbeat::write_note(std::unique_lock<std::mutex>& lock) {
  auto note = m_note;
  m_note_due = false;
  lock.unlock();
  bool written = false;
  try {
    m_lease.note_leftovers(note);
    written = true;
  } catch (const std::exception& error) {
    spdlog::debug("recording the leftovers on {} failed: {}", lease(), error.what());
  }
  lock.lock();
  if (!written && !m_note_due)
    m_note_failed = true;
}

void Heartbeat::announce() {
  std::uint64_t one = 1;
  [[maybe_unused]] auto ignored = write(m_news_fd, &one, sizeof one);
}

std::string Heartbeat::lease() const {
  return m_options.lease_name.empty() ? "the lease" : "the lease on " + m_options.lease_name;
}

RenewOutcome Heartbeat::attempt() {
  try {
    RenewOutcome outcome = m_lease.renew();
    if (outcome == RenewOutcome::unavailable)
      m_trouble = "the database is unavailable";
    return outcome;
  } catch (const Error& error) {
    if (error.code() == ExitCode::not_owner)
      return RenewOutcome::lost;
    m_trouble = in_our_words(error);
    spdlog::debug("why renewing {} failed, in full: {}", lease(), error.what());
  } catch (const std::exception& error) {
    m_trouble = std::string("an unexpected error: ") + error.what();
  } catch (...) {
    m_trouble = "an unknown error";
  }
  return RenewOutcome::unavailable;
}

// Between renewals: a cheap look at whether the lease is still ours; false
// once it is found lost. An error says nothing about the lease: the next
// renewal will tell.
bool Heartbeat::check(std::unique_lock<std::mutex>& lock) {
  lock.unlock();
  time_point start = Clock::now();
  bool held = true;
  try {
    held = m_lease.still_holds();
  } catch (const std::exception& error) {
    spdlog::debug("checking {} failed: {}", lease(), error.what());
  } catch (...) {
    spdlog::debug("checking {} failed with an unknown error", lease());
  }
  lock.lock();
  if (held) {
    m_last_held = std::max(m_last_held, start);
    return true;
  }
  m_lost = true;
  announce();
  return false;
}

// How long the command may still run protected, as the main loop will act on it.
std::string Heartbeat::what_is_at_stake(time_point now) const {
  auto left = std::chrono::duration_cast<milliseconds>(
      lease_deadline(m_last_renewal_start, m_options.ttl, m_options.kill_after) - now);
  bool kill = m_options.on_lease_lost == LeaseLostPolicy::kill;
  if (left <= milliseconds::zero())
    return kill ? "the command is being stopped" : "the command runs unprotected by the lock";
  return (kill ? "the command is stopped in " : "the lock stops protecting the command in ") +
         util::format_duration(left) + " unless a renewal succeeds first";
}

void Heartbeat::renewal_failed(int failures, milliseconds delay) {
  spdlog::warn("renewing {} failed (attempt {}): {}; next try in {}, {}", lease(), failures,
               m_trouble, util::format_duration(delay), what_is_at_stake(Clock::now()));
}

void Heartbeat::run() {
  // Named for `top -H` and `ps -L` (and the test that checks a short run
  // never starts it).
  pthread_setname_np(pthread_self(), "clock-heartbeat");
  // Signals for clock belong to the main loop, not to a renewal in flight.
  sigset_t relayed = relayed_signal_set();
  pthread_sigmask(SIG_BLOCK, &relayed, nullptr);
  std::mt19937 random(util::random_seed());
  std::uniform_real_distribution<double> jitter(0.5, 1.0);
  int failures = 0;
  const bool rests = m_lease.rest && m_lease.rest_after;

  std::unique_lock lock(m_mutex);
  time_point next = m_last_renewal_start + m_options.heartbeat;
  time_point next_check = m_first_check;
  time_point next_rest = m_first_rest;
  for (;;) {
    m_wake.wait_until(lock, std::min({next, next_check, next_rest}),
                      [this] { return m_stopping || m_note_due; });
    if (m_stopping)
      return;
    if (m_note_due) {
      write_note(lock);
      continue;
    }
    if (Clock::now() >= next_rest && Clock::now() < next) {  // idle: give the connection back
      lock.unlock();
      m_lease.rest();
      lock.lock();
      next_rest = time_point::max();
      continue;
    }
    if (Clock::now() < next) {  // a check is due, not a renewal
      if (!check(lock))
        return;
      next_check = Clock::now() + *m_lease.check_interval;
      // A check may have borrowed the connection (PostgreSQL reads the lease
      // when its watch heard of a loss): give it back once idle.
      if (rests && next_rest == time_point::max())
        next_rest = Clock::now() + *m_lease.rest_after;
      continue;
    }
    lock.unlock();
    time_point start = Clock::now();
    RenewOutcome outcome = attempt();
    lock.lock();
    if (rests)
      next_rest = Clock::now() + *m_lease.rest_after;
    switch (outcome) {
      case RenewOutcome::renewed:
        // The server's lease runs from no earlier than this attempt's start.
        m_last_renewal_start = std::max(m_last_renewal_start, start);
        m_last_held = std::max(m_last_held, start);
        if (failures > 0)
          spdlog::warn("renewed {} again after {} failed attempt{}", lease(), failures,
                       failures == 1 ? "" : "s");
        failures = 0;
        next = start + m_options.heartbeat;
        announce();
        if (m_note_failed) {
          m_note_failed = false;
          m_note_due = true;
        }
        break;
      case RenewOutcome::lost:
        m_lost = true;
        announce();
        return;
      case RenewOutcome::unavailable: {
        ++failures;
        auto delay = retry_delay(failures, m_options.heartbeat, jitter(random));
        renewal_failed(failures, delay);
        next = Clock::now() + delay;
        break;
      }
    }
  }
}

}  // namespace clk::run
