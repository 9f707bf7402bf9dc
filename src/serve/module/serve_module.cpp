// clock-serve.so: the HTTP server of `clock serve` (Debian's cpp-httplib),
// behind C entry points that clock loads (dlopen) only for `clock serve`.
// Debian builds cpp-httplib as a shared library with OpenSSL, zlib and
// brotli, which every other command should not load, as libpq costs nothing
// to a SQLite run.
#include "serve/module/serve_module.h"

#include <cstdio>
#include <httplib.h>
#include <memory>
#include <string>
#include <vector>

namespace {

struct Server {
  httplib::Server http;
  clock_serve_handler handler = nullptr;
  void* context = nullptr;
};

void set_error(char* error, size_t error_size, const std::string& text) {
  if (error && error_size > 0)
    std::snprintf(error, error_size, "%s", text.c_str());
}

void reply_into(void* sink, int status, const char* content_type, const char* body,
                size_t body_size) {
  auto* response = static_cast<httplib::Response*>(sink);
  response->status = status;
  response->set_content(body, body_size, content_type);
  if (status == 401)
    response->set_header("WWW-Authenticate", "Basic realm=\"clock\", charset=\"UTF-8\"");
  // Nothing the page shows may be framed or sniffed into something else.
  response->set_header("X-Content-Type-Options", "nosniff");
  response->set_header("X-Frame-Options", "DENY");
  response->set_header("Cache-Control", "no-store");
}

void handle(Server& server, const httplib::Request& request, httplib::Response& response) {
  std::vector<const char*> params;
  params.reserve(request.params.size() * 2);
  for (const auto& [name, value] : request.params) {
    params.push_back(name.c_str());
    params.push_back(value.c_str());
  }
  std::string authorization = request.get_header_value("Authorization");
  clock_serve_request shown{request.path.c_str(), params.data(), request.params.size(),
                            authorization.c_str()};
  server.handler(server.context, &shown, reply_into, &response);
}

}  // namespace

extern "C" {

const char clock_serve_module_abi[] = CLOCK_SERVE_ABI;

void* clock_serve_open(const char* host, int port, int threads, clock_serve_handler handler,
                       void* context, int* bound_port, char* error, size_t error_size) {
  auto server = std::make_unique<Server>();
  server->handler = handler;
  server->context = context;
  Server* raw = server.get();
  const size_t workers = threads > 0 ? static_cast<size_t>(threads) : 4;
  server->http.new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
  server->http.Get(".*", [raw](const httplib::Request& request, httplib::Response& response) {
    handle(*raw, request, response);
  });
  // A slow or idle client holds a worker for at most this long.
  server->http.set_read_timeout(5, 0);
  server->http.set_write_timeout(5, 0);
  server->http.set_keep_alive_max_count(20);
  server->http.set_payload_max_length(64 * 1024);
  int bound = port;
  if (port == 0) {
    bound = server->http.bind_to_any_port(host);
    if (bound < 0) {
      set_error(error, error_size, std::string("cannot listen on ") + host + ": no free port");
      return nullptr;
    }
  } else if (!server->http.bind_to_port(host, port)) {
    set_error(error, error_size,
              std::string("cannot listen on ") + host + ":" + std::to_string(port) +
                  " (address in use, not an address of this host, or a port below 1024)");
    return nullptr;
  }
  if (bound_port)
    *bound_port = bound;
  return server.release();
}

int clock_serve_run(void* server) {
  return static_cast<Server*>(server)->http.listen_after_bind() ? 0 : -1;
}

void clock_serve_stop(void* server) {
  static_cast<Server*>(server)->http.stop();
}

void clock_serve_close(void* server) {
  delete static_cast<Server*>(server);
}

}  // extern "C"
