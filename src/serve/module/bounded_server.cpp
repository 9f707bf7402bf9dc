// See bounded_server.hpp. httplib reads a request through a Stream and
// takes its task queue from new_task_queue: both are replaced here, and the
// request itself is still parsed and answered by httplib (process_request).
#include "serve/module/bounded_server.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <netinet/in.h>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <utility>

namespace clock_serve {

namespace {

using Clock = std::chrono::steady_clock;

// Waits until `fd` is ready for `events` or `deadline` passes; false then.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0)
      return false;
    pollfd entry{fd, events, 0};
    const int ready = ::poll(&entry, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready > 0)
      return (entry.revents & (events | POLLHUP | POLLERR)) != 0;
    if (ready < 0 && errno != EINTR)
      return false;
  }
}

void address_of(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage address{};
  socklen_t size = sizeof address;
  const int got = peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &size)
                       : ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
  if (got != 0)
    return;
  char text[INET6_ADDRSTRLEN] = "";
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    ::inet_ntop(AF_INET, &v4.sin_addr, text, sizeof text);
    port = ntohs(v4.sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
    ::inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof text);
    port = ntohs(v6.sin6_port);
  }
  ip = text;
}

// The bytes read from a connection and not yet handed to httplib: kept per
// connection, not per request, so that a pipelined request read ahead is
// not lost.
struct ReadBuffer {
  char bytes[4096];
  std::size_t begin = 0;
  std::size_t end = 0;
  bool empty() const { return begin == end; }
};

// One request's view of its socket: every read before `read_by`, every
// write before `write_by`, however the client paces its bytes.
class DeadlineStream : public httplib::Stream {
 public:
  DeadlineStream(int fd, ReadBuffer& buffer, Clock::time_point read_by, Clock::time_point write_by)
      : m_fd(fd), m_buffer(buffer), m_read_by(read_by), m_write_by(write_by) {}

  bool is_readable() const override {
    return !m_buffer.empty() || wait_for(m_fd, POLLIN, m_read_by);
  }
  bool is_writable() const override { return wait_for(m_fd, POLLOUT, m_write_by); }

  ssize_t read(char* ptr, std::size_t size) override {
    if (m_buffer.empty()) {
      if (!wait_for(m_fd, POLLIN, m_read_by)) {
        m_cut = true;
        return -1;
      }
      const ssize_t got = ::recv(m_fd, m_buffer.bytes, sizeof m_buffer.bytes, 0);
      if (got <= 0) {
        m_cut = true;
        return got;
      }
      m_buffer.begin = 0;
      m_buffer.end = static_cast<std::size_t>(got);
    }
    const std::size_t taken = std::min(size, m_buffer.end - m_buffer.begin);
    std::memcpy(ptr, m_buffer.bytes + m_buffer.begin, taken);
    m_buffer.begin += taken;
    return static_cast<ssize_t>(taken);
  }

  ssize_t write(const char* ptr, std::size_t size) override {
    if (!is_writable())
      return -1;
    return ::send(m_fd, ptr, size, MSG_NOSIGNAL);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    address_of(m_fd, true, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    address_of(m_fd, false, ip, port);
  }
  socket_t socket() const override { return m_fd; }
  // The request ran out of time, or the client closed: the connection ends
  // (what is left of its bytes is no next request).
  bool cut() const { return m_cut; }

 private:
  bool m_cut = false;
  int m_fd;
  ReadBuffer& m_buffer;
  Clock::time_point m_read_by;
  Clock::time_point m_write_by;
};

// A thread per connection: a connection waiting for a slow client costs a
// thread that sleeps in poll, not a worker that others queue behind. The
// number of connections (so of threads) is BoundedServer's to limit, and
// BoundedServer waits for the threads: httplib deletes its queue when it
// stops listening.
class ThreadPerConnection : public httplib::TaskQueue {
 public:
  explicit ThreadPerConnection(BoundedServer& server) : m_server(server) {}

  void enqueue(std::function<void()> task) override {
    m_server.thread_started();
    std::thread([&server = m_server, task = std::move(task)] {
      task();
      server.thread_ended();
    }).detach();
  }

  void shutdown() override {}

 private:
  BoundedServer& m_server;
};

}  // namespace

BoundedServer::BoundedServer(Bounds bounds) : m_bounds(bounds) {
  new_task_queue = [this] { return new ThreadPerConnection(*this); };
}

BoundedServer::~BoundedServer() {
  close_connections();
}

void BoundedServer::thread_started() {
  std::lock_guard lock(m_mutex);
  ++m_threads;
}

void BoundedServer::thread_ended() {
  std::lock_guard lock(m_mutex);
  if (--m_threads == 0)
    m_threads_ended.notify_all();
}

BoundedServer::Entry BoundedServer::admit(int fd) {
  std::lock_guard lock(m_mutex);
  if (m_stopping)
    ::shutdown(fd, SHUT_RDWR);
  if (m_connections.size() >= m_bounds.max_connections) {
    // The oldest connection that waits for a client (its request's bytes,
    // or its next request) makes room: a legitimate request is read in
    // milliseconds, so what goes is the slowest client, and /healthz gets in
    // however many slow ones are connected. Its thread sees the socket shut
    // and ends; the entry goes when it leaves.
    auto oldest = m_connections.end();
    for (auto it = m_connections.begin(); it != m_connections.end(); ++it) {
      const bool waiting = !it->answering && it->fd >= 0;
      if (waiting && (oldest == m_connections.end() || it->since < oldest->since))
        oldest = it;
    }
    if (oldest != m_connections.end()) {
      ::shutdown(oldest->fd, SHUT_RDWR);
      oldest->fd = -1;  // shut once; its own thread closes it
    } else {
      // Every connection is being answered: this one waits its turn in the
      // kernel's backlog no longer than a reply takes.
      ::shutdown(fd, SHUT_RDWR);
    }
  }
  m_connections.push_back({fd, false, Clock::now()});
  return std::prev(m_connections.end());
}

void BoundedServer::set_answering(Entry entry, bool answering) {
  std::lock_guard lock(m_mutex);
  entry->answering = answering;
  entry->since = Clock::now();
}

void BoundedServer::leave(Entry entry) {
  std::lock_guard lock(m_mutex);
  m_connections.erase(entry);
}

void BoundedServer::close_connections() {
  std::unique_lock lock(m_mutex);
  m_stopping = true;
  for (auto& connection : m_connections) {
    if (connection.fd >= 0)
      ::shutdown(connection.fd, SHUT_RDWR);
    connection.fd = -1;
  }
  m_threads_ended.wait(lock, [this] { return m_threads == 0; });
}

bool BoundedServer::process_and_close_socket(socket_t sock) {
  const Entry entry = admit(sock);
  ReadBuffer buffer;
  bool answered = false;
  for (std::size_t left = m_bounds.requests_per_connection; left > 0 && svr_sock_ != INVALID_SOCKET;
       --left) {
    // The next request's first byte, within the idle timeout.
    if (buffer.empty() && !wait_for(sock, POLLIN, Clock::now() + m_bounds.idle_timeout))
      break;
    const auto first_byte = Clock::now();
    DeadlineStream stream(sock, buffer, first_byte + m_bounds.request_deadline,
                          first_byte + m_bounds.reply_deadline);
    // Answering starts once httplib has the request whole; until then this
    // connection may be evicted, which is what makes reading it cheap.
    bool closed = false;
    answered = process_request(stream, left == 1, closed,
                               [this, entry](httplib::Request&) { set_answering(entry, true); });
    set_answering(entry, false);
    if (!answered || closed || stream.cut())
      break;
  }
  leave(entry);
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return answered;
}

}  // namespace clock_serve
