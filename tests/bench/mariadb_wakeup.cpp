// The experiment behind docs/internals/mariadb.md, "How the first waiter learns of a
// release": how long after a release a waiter sees it, on one MariaDB server,
//   poll P   the waiter reads the row every P ms (one prepared SELECT)
//   get_lock the waiter blocks in GET_LOCK(k, 10) while a holder session
//            keeps k; the release is RELEASE_LOCK(k)
//   kill     the waiter sleeps in SELECT SLEEP(10) on a connection whose id
//            it published; the releaser (a borrowed connection, same login)
//            ends that query with KILL QUERY id
// and what a poll costs the server (mariadbd's CPU time per statement).
// Not part of any build (it is an experiment, not a tool). Build and run
// against tests/helpers/with-mariadb.sh (see docs/internals/mariadb.md for the line):
//   c++ -std=c++20 -O2 -Isrc -I/usr/include/mariadb tests/bench/mariadb_wakeup.cpp \
//     src/store/mariadb/connection.cpp src/store/mariadb_url.cpp src/util/password.cpp \
//     -lmariadb -lpthread -o /tmp/mariadb_wakeup
//   tests/helpers/with-mariadb.sh bash -c '/tmp/mariadb_wakeup $(cat
//   $CLOCK_TEST_MARIADB_DATA/../mariadbd.pid)'
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "store/mariadb/connection.hpp"
#include "store/mariadb_url.hpp"

using namespace std::chrono_literals;
using clk::store::mariadb::Connection;
using clk::store::mariadb::ConnectOptions;
using Clock = std::chrono::steady_clock;

namespace {

ConnectOptions options(const std::string& database) {
  std::string url = std::getenv("CLOCK_TEST_MARIADB_URL");
  std::size_t slash = url.find("/?");
  url = url.substr(0, slash + 1) + database + url.substr(slash + 1);
  ConnectOptions out;
  out.url = clk::store::parse_mariadb_url(url);
  return out;
}

double ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

void report(const char* what, std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  auto at = [&](double q) { return samples[static_cast<std::size_t>(q * (samples.size() - 1))]; };
  std::printf("%-14s n=%zu  p50 %6.2f ms  p90 %6.2f ms  p99 %6.2f ms  max %6.2f ms\n", what,
              samples.size(), at(0.5), at(0.9), at(0.99), samples.back());
}

// utime + stime of a process, in clock ticks.
long cpu_ticks(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), {});
  std::size_t close = text.rfind(')');
  std::vector<std::string> fields;
  std::size_t at = close + 2;
  while (at < text.size()) {
    std::size_t space = text.find(' ', at);
    fields.push_back(text.substr(at, space - at));
    if (space == std::string::npos)
      break;
    at = space + 1;
  }
  return std::stol(fields[11]) + std::stol(fields[12]);  // fields 14 and 15 of stat
}

std::vector<double> poll_trial(int period_ms, int trials) {
  Connection releaser(options("wake"));
  Connection waiter(options("wake"));
  auto release = releaser.prepare("release", "UPDATE bell SET n = n + 1 WHERE k = 1");
  auto look = waiter.prepare("look", "SELECT n FROM bell WHERE k = 1");
  std::mt19937 random(42);
  std::vector<double> samples;
  for (int i = 0; i < trials; ++i) {
    std::string before = *look.query({}).at(0).at(0);
    std::atomic<Clock::time_point::rep> released{0};
    std::thread holder([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20 + random() % 60));
      released = Clock::now().time_since_epoch().count();
      release.execute({});
    });
    // The waiter's own schedule: a look every period, from its last look.
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(period_ms));
      if (*look.query({}).at(0).at(0) != before)
        break;
    }
    auto seen = Clock::now();
    holder.join();
    samples.push_back(ms(seen - Clock::time_point(Clock::duration(released.load()))));
  }
  return samples;
}

std::vector<double> get_lock_trial(int trials) {
  Connection holder(options("wake"));
  Connection waiter(options("wake"));
  auto take = holder.prepare("take", "SELECT GET_LOCK('clock.wake.test', 0)");
  auto give = holder.prepare("give", "SELECT RELEASE_LOCK('clock.wake.test')");
  auto wait = waiter.prepare("wait", "SELECT GET_LOCK('clock.wake.test', 10)");
  auto done = waiter.prepare("done", "SELECT RELEASE_LOCK('clock.wake.test')");
  std::mt19937 random(42);
  std::vector<double> samples;
  for (int i = 0; i < trials; ++i) {
    take.query({});
    std::atomic<Clock::time_point::rep> released{0};
    std::thread releaser([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20 + random() % 60));
      released = Clock::now().time_since_epoch().count();
      give.query({});
    });
    wait.query({});
    auto seen = Clock::now();
    releaser.join();
    done.query({});
    samples.push_back(ms(seen - Clock::time_point(Clock::duration(released.load()))));
  }
  return samples;
}

std::vector<double> kill_trial(int trials) {
  Connection waiter(options("wake"));
  Connection releaser(options("wake"));
  auto id = *waiter.prepare("id", "SELECT CONNECTION_ID()").query({}).at(0).at(0);
  int interrupted = 0;
  std::mt19937 random(42);
  std::vector<double> samples;
  for (int i = 0; i < trials; ++i) {
    std::atomic<Clock::time_point::rep> released{0};
    std::thread other([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20 + random() % 60));
      released = Clock::now().time_since_epoch().count();
      releaser.execute("kill", "KILL QUERY " + id);
    });
    // Over the text protocol an interrupted SLEEP() returns; a prepared
    // one fails with 1317 (query interrupted).
    try {
      waiter.execute("sleep", "DO SLEEP(10)");
    } catch (const clk::store::mariadb::ServerTrouble& trouble) {
      ++interrupted;
    }
    auto seen = Clock::now();
    other.join();
    if (!waiter.is_open())
      id = *waiter.prepare("id", "SELECT CONNECTION_ID()").query({}).at(0).at(0);
    samples.push_back(ms(seen - Clock::time_point(Clock::duration(released.load()))));
  }
  std::printf("kill: %d of %d sleeps ended with an error (1317)\n", interrupted, trials);
  return samples;
}

}  // namespace

int main(int argc, char** argv) {
  long server_pid = argc > 1 ? std::atol(argv[1]) : 0;
  int trials = argc > 2 ? std::atoi(argv[2]) : 100;
  {
    Connection admin(options("mysql"));
    admin.execute("create", "CREATE DATABASE IF NOT EXISTS wake");
    admin.execute("table", "CREATE TABLE IF NOT EXISTS wake.bell (k INT PRIMARY KEY, n BIGINT)");
    admin.execute("row", "INSERT IGNORE INTO wake.bell VALUES (1, 0)");
  }
  for (int period : {5, 10, 20, 25, 50})
    report(("poll " + std::to_string(period) + " ms").c_str(), poll_trial(period, trials));
  report("get_lock", get_lock_trial(trials));
  report("kill", kill_trial(trials));

  if (server_pid > 0) {
    // The server's CPU per poll: 20,000 looks back to back on one connection.
    Connection waiter(options("wake"));
    auto look = waiter.prepare("look", "SELECT n FROM bell WHERE k = 1");
    constexpr int k_looks = 20'000;
    long before = cpu_ticks(server_pid);
    auto started = Clock::now();
    for (int i = 0; i < k_looks; ++i)
      look.query({});
    double wall = ms(Clock::now() - started);
    long ticks = cpu_ticks(server_pid) - before;
    double cpu_us = 1e6 * static_cast<double>(ticks) / static_cast<double>(sysconf(_SC_CLK_TCK));
    std::printf("server CPU per look: %.1f us (%d looks, %.0f ms wall, %.3f ms a round trip)\n",
                cpu_us / k_looks, k_looks, wall, wall / k_looks);
  }
}
