// The HTTP server of `clock serve`, in clock-serve.so (loaded with dlopen on
// first use, as clock-ping.so is), wrapped for C++: requests in, replies out.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace clk::serve {

struct Request {
  std::string path;
  std::vector<std::pair<std::string, std::string>> params;  // decoded query, in order
  std::string authorization;                                // "" when absent
};

struct Reply {
  // Shared, not copied: a body cached for a refresh period is sent by every
  // request of the period, and kept alive until the last one is sent.
  using Body = std::shared_ptr<const std::string>;

  Reply() = default;
  Reply(int status, std::string content_type, std::string text)
      : status(status),
        content_type(std::move(content_type)),
        body(std::make_shared<const std::string>(std::move(text))) {}
  Reply(int status, std::string content_type, Body shared)
      : status(status), content_type(std::move(content_type)), body(std::move(shared)) {}

  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  Body body = std::make_shared<const std::string>();
};

using Handler = std::function<Reply(const Request&)>;

// A bound listening socket; serve() answers requests until stop().
class HttpServer {
 public:
  // Loads the module and binds host:port (0: any free port); at most
  // `connections` at once (module/bounded_server.hpp). Throws
  // clk::Error: unavailable (69) when the module is missing or does not
  // match, usage (64) when the address cannot be bound.
  HttpServer(const std::string& host, int port, int connections, Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return m_port; }
  // Blocks, answering requests on the module's threads, until stop().
  void serve();
  // From any thread (not a signal handler).
  void stop();

 private:
  Handler m_handler;
  void* m_server = nullptr;
  int m_port = 0;
};

}  // namespace clk::serve
