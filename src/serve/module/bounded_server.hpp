// cpp-httplib's server with what it lacks against slow or idle clients
// (docs/serve.md, "Slow visitors"): each connection on a thread of its own
// up to a limit, each request read whole within a deadline (httplib's own
// timeout is per recv, so a header line every few seconds held a worker
// forever), and, when the limit is reached, the oldest connection that is
// not being answered closed to make room for the new one.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <httplib.h>
#include <list>
#include <mutex>

namespace clock_serve {

struct Bounds {
  std::size_t max_connections = 256;
  // From a request's first byte to its last (head and body).
  std::chrono::milliseconds request_deadline{5000};
  // From a request's first byte to the last byte of its reply.
  std::chrono::milliseconds reply_deadline{30000};
  // How long a kept-alive connection may wait for its next request.
  std::chrono::milliseconds idle_timeout{5000};
  std::size_t requests_per_connection = 20;
};

class BoundedServer : public httplib::Server {
 public:
  explicit BoundedServer(Bounds bounds);
  // Waits for every connection's thread: httplib's own task queue may be
  // gone before they are.
  ~BoundedServer() override;
  // Closes every connection's socket so that their threads end, and waits
  // for them: after stop(), before the server is destroyed.
  void close_connections();
  // A connection's thread starts (on the accepting thread) and ends.
  void thread_started();
  void thread_ended();

 private:
  struct Connection {
    int fd;
    bool answering = false;  // a request is being handled: never evicted
    std::chrono::steady_clock::time_point since;
  };
  using Entry = std::list<Connection>::iterator;

  // httplib calls this on a thread of the task queue for each accepted socket.
  bool process_and_close_socket(socket_t sock) override;
  Entry admit(int fd);
  void set_answering(Entry entry, bool answering);
  void leave(Entry entry);

  Bounds m_bounds;
  std::mutex m_mutex;
  std::list<Connection> m_connections;
  bool m_stopping = false;
  std::size_t m_threads = 0;
  std::condition_variable m_threads_ended;
};

}  // namespace clock_serve
