// Pings to a healthchecks.io-style URL (man clock, COMMANDS, `clock run --ping`): /start
// when the job starts on this host, /<exit status> with the tail of its
// stderr when it ends, /fail when the database cannot be reached, and /log
// for a skipped run where asked. Each ping is one HTTP POST through libcurl
// (the clock-ping.so module), bounded by k_ping_timeout; a failed ping is a
// warning and never changes clock's exit status.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace clk::notify {

// The most a ping may take, DNS, connect and reply included: a run pings at
// most twice (/start, then /<status>), so pings add at most twice this to
// its wall time.
inline constexpr std::chrono::milliseconds k_ping_timeout{2'000};

// The most of the command's stderr sent with /<status>: its last bytes.
inline constexpr std::size_t k_tail_bytes = 10 * 1024;

// The endpoint of a ping: `suffix` ("start", "0", "fail", "log") appended to
// the URL's path, and rid=`run_id` to its query.
std::string ping_endpoint(std::string_view url, std::string_view suffix, std::string_view run_id);

class Pinger {
 public:
  // run_id: a UUID naming this run, so the receiver pairs /start with its end.
  Pinger(std::string url, std::string run_id, bool log_skips);

  void started();
  void finished(int status, std::string_view tail);
  void skipped(std::string_view why);  // only with log_skips
  void failed(std::string_view why);

 private:
  void send(std::string_view suffix, std::string_view body);

  std::string m_url;
  std::string m_run_id;
  bool m_log_skips;
};

}  // namespace clk::notify
