// The tail of a job's stderr, for the ping that reports its end: while it
// is active, clock's fd 2 (which the command inherits) is a pipe that a
// thread copies, unchanged, to the original stderr and keeps the last bytes
// of. Only where stderr is not a terminal (cron, systemd, a pipe): a
// terminal stays the command's own, and no tail is sent.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <thread>

namespace clk::notify {

class StderrTail {
 public:
  explicit StderrTail(std::size_t keep);
  ~StderrTail();
  StderrTail(const StderrTail&) = delete;
  StderrTail& operator=(const StderrTail&) = delete;

  // Puts the pipe in place of fd 2; does nothing on a terminal, or if no
  // pipe can be had (then no tail is kept).
  void start();
  // Gives fd 2 back and returns the last `keep` bytes written to it: what
  // is written until the last writer closes it, or 200 ms, whichever is
  // first (a process the job left behind may keep it open).
  std::string stop();

 private:
  void copy(int from);

  std::size_t m_keep;
  int m_saved = -1;  // the original stderr while the pipe is in place
  int m_read = -1;
  std::thread m_thread;
  std::mutex m_mutex;
  std::string m_tail;
  bool m_stopping = false;
};

}  // namespace clk::notify
