// clock-serve.so: the HTTP server of `clock serve` (Debian's cpp-httplib),
// behind C entry points that clock loads (dlopen) only for `clock serve`.
// Debian builds cpp-httplib as a shared library with OpenSSL, zlib and
// brotli, which every other command should not load, as libpq costs nothing
// to a SQLite run.
#include "serve/module/serve_module.h"

#include <algorithm>
#include <cstdio>
#include <httplib.h>
#include <memory>
#include <string>
#include <vector>

#include "serve/module/bounded_server.hpp"

namespace {

struct Server {
  explicit Server(clock_serve::Bounds bounds) : http(bounds) {}
  clock_serve::BoundedServer http;
  clock_serve_handler handler = nullptr;
  void* context = nullptr;
};

void set_error(char* error, size_t error_size, const std::string& text) {
  if (error && error_size > 0)
    std::snprintf(error, error_size, "%s", text.c_str());
}

// What reply_into answers into: the response, and whether the client takes
// a compressed body.
struct Sink {
  httplib::Response& response;
  bool compressible;
};

// The piece of a body written per call of a content provider: the socket
// is written 64 KiB at a time, and a stopping server is noticed between.
constexpr size_t k_piece = 64 * 1024;

void reply_into(void* sink, int status, const char* content_type, const char* body,
                size_t body_size, clock_serve_release release, void* cookie) {
  auto& into = *static_cast<Sink*>(sink);
  auto& response = into.response;
  response.status = status;
  // httplib's Response destroys the releaser when it is done with the
  // provider: sent, failed or never started.
  auto releaser = [release, cookie](bool) {
    if (release)
      release(cookie);
  };
  if (body_size == 0) {
    // A provider of no bytes is not a provider to httplib.
    response.set_content("", 0, content_type);
    releaser(true);
  } else if (into.compressible) {
    // Chunked, so that httplib compresses it (gzip or brotli, as the client
    // asks) a piece at a time, as it compresses a body set with set_content.
    response.set_chunked_content_provider(
        content_type,
        [body, body_size](size_t offset, httplib::DataSink& data) {
          if (offset < body_size &&
              !data.write(body + offset, std::min(k_piece, body_size - offset)))
            return false;
          if (offset + k_piece >= body_size)
            data.done();
          return true;
        },
        releaser);
  } else {
    response.set_content_provider(
        body_size, content_type,
        [body](size_t offset, size_t length, httplib::DataSink& data) {
          return data.write(body + offset, std::min(k_piece, length));
        },
        releaser);
  }
  if (status == 401)
    response.set_header("WWW-Authenticate", "Basic realm=\"clock\", charset=\"UTF-8\"");
  // Nothing the page shows may be framed or sniffed into something else.
  response.set_header("X-Content-Type-Options", "nosniff");
  response.set_header("X-Frame-Options", "DENY");
  response.set_header("Cache-Control", "no-store");
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
  Sink sink{response, !request.get_header_value("Accept-Encoding").empty()};
  server.handler(server.context, &shown, reply_into, &sink);
}

}  // namespace

extern "C" {

const char clock_serve_module_abi[] = CLOCK_SERVE_ABI;

void* clock_serve_open(const char* host, int port, int connections, clock_serve_handler handler,
                       void* context, int* bound_port, char* error, size_t error_size) {
  clock_serve::Bounds bounds;
  if (connections > 0)
    bounds.max_connections = static_cast<size_t>(connections);
  auto server = std::make_unique<Server>(bounds);
  server->handler = handler;
  server->context = context;
  Server* raw = server.get();
  server->http.Get(".*", [raw](const httplib::Request& request, httplib::Response& response) {
    handle(*raw, request, response);
  });
  // The deadlines are bounded_server's; what httplib still reads itself is
  // the largest body it takes (a GET has none).
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
  auto& http = static_cast<Server*>(server)->http;
  http.stop();
  http.close_connections();
}

void clock_serve_close(void* server) {
  delete static_cast<Server*>(server);
}

}  // extern "C"
