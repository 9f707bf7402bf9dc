/* The entry points of clock-serve.so (module/serve_module.cpp), which
   serve/http_module.cpp loads with dlopen. Plain C types only: the module
   shares no C++ type with clock; it moves bytes between sockets and the
   handler that clock passes in. */
#pragma once

#include <stddef.h>

#define CLOCK_SERVE_ABI "clock-serve 3"

#ifdef __cplusplus
extern "C" {
#endif

/* "clock-serve 3": the module's version of this interface. */
extern const char clock_serve_module_abi[];

/* One GET or HEAD request: the path without its query, the decoded query
   parameters as name/value pairs (params[2i], params[2i+1]), and the
   Authorization header ("" when absent). */
struct clock_serve_request {
  const char* path;
  const char* const* params;
  size_t param_count;
  const char* authorization;
};

/* Gives back a body that the module no longer reads. */
typedef void (*clock_serve_release)(void* cookie);

/* What the handler answers. A 401 gets `WWW-Authenticate: Basic`. The
   module sends `body` as it is, without copying it: it stays valid until
   the module calls release(cookie), exactly once, when the body is sent or
   the connection is gone (release may be NULL: a body that lives as long as
   the server). So a cached body of megabytes is shared by every request
   that sends it, not copied per request. */
typedef void (*clock_serve_reply)(void* sink, int status, const char* content_type,
                                  const char* body, size_t body_size, clock_serve_release release,
                                  void* cookie);

/* Called on the module's connection threads, several at a time: the handler is
   thread-safe. It calls `reply` once before returning. */
typedef void (*clock_serve_handler)(void* context, const struct clock_serve_request* request,
                                    clock_serve_reply reply, void* sink);

/* Binds host:port (port 0: any free port) and returns a server, or NULL
   with a one-line reason in `error`. *bound_port receives the port. At most
   `connections` are open at once, each on a thread of its own; a request
   must arrive whole within a deadline (module/bounded_server.hpp). */
void* clock_serve_open(const char* host, int port, int connections, clock_serve_handler handler,
                       void* context, int* bound_port, char* error, size_t error_size);
/* Serves until clock_serve_stop (from another thread). Returns 0, or -1. */
int clock_serve_run(void* server);
void clock_serve_stop(void* server);
void clock_serve_close(void* server);

#ifdef __cplusplus
}
#endif
