// Loads clock-serve.so (as notify/ping.cpp loads clock-ping.so) and adapts
// its C entry points to HttpServer.
#include "serve/http_module.hpp"

#include <dlfcn.h>
#include <exception>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "error.hpp"
#include "serve/module/serve_module.h"
#include "util/private_files.hpp"

namespace clk::serve {

namespace {

struct Module {
  decltype(&clock_serve_open) open = nullptr;
  decltype(&clock_serve_run) run = nullptr;
  decltype(&clock_serve_stop) stop = nullptr;
  decltype(&clock_serve_close) close = nullptr;
};

Module load_module() {
  constexpr const char* k_file = "clock-serve.so";
  auto found = util::find_private_file(k_file);
  if (!found.path)
    throw Error(ExitCode::unavailable,
                std::string("clock serve is not installed: no ") + k_file + " in " + found.tried);
  const auto& file = *found.path;
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    throw Error(ExitCode::unavailable,
                "cannot load " + file.string() + ": " + dlerror() + "; reinstall clock");
  const auto* abi = static_cast<const char*>(dlsym(handle, "clock_serve_module_abi"));
  Module module{reinterpret_cast<decltype(&clock_serve_open)>(dlsym(handle, "clock_serve_open")),
                reinterpret_cast<decltype(&clock_serve_run)>(dlsym(handle, "clock_serve_run")),
                reinterpret_cast<decltype(&clock_serve_stop)>(dlsym(handle, "clock_serve_stop")),
                reinterpret_cast<decltype(&clock_serve_close)>(dlsym(handle, "clock_serve_close"))};
  if (!abi || std::string_view(abi) != CLOCK_SERVE_ABI || !module.open || !module.run ||
      !module.stop || !module.close)
    throw Error(ExitCode::unavailable,
                file.string() + " does not match this clock binary; reinstall clock");
  return module;
}

const Module& module() {
  static const Module loaded = load_module();
  return loaded;
}

// The module is done with a body: the request's share of it goes.
void release_body(void* cookie) {
  delete static_cast<Reply::Body*>(cookie);
}

void handle(void* context, const clock_serve_request* request, clock_serve_reply reply,
            void* sink) {
  Reply answer;
  try {
    Request shown;
    shown.path = request->path;
    for (size_t i = 0; i < request->param_count; ++i)
      shown.params.emplace_back(request->params[2 * i], request->params[2 * i + 1]);
    shown.authorization = request->authorization;
    answer = (*static_cast<Handler*>(context))(shown);
  } catch (const std::exception& error) {
    // The database is away or the read failed: the page says so, and the
    // next request tries again.
    spdlog::warn("{}: {}", request->path, error.what());
    answer = {503, "text/plain; charset=utf-8", std::string(error.what()) + "\n"};
  }
  // The module sends the body from where it is, after this returns: this
  // request's share keeps it alive until release_body.
  auto* kept = new Reply::Body(std::move(answer.body));
  reply(sink, answer.status, answer.content_type.c_str(), (*kept)->data(), (*kept)->size(),
        release_body, kept);
}

}  // namespace

HttpServer::HttpServer(const std::string& host, int port, int connections, Handler handler)
    : m_handler(std::move(handler)) {
  const auto& loaded = module();
  char error[256] = "";
  m_server = loaded.open(host.c_str(), port, connections, handle, &m_handler, &m_port, error,
                         sizeof error);
  if (!m_server)
    throw Error(ExitCode::usage, std::string(error) + "; choose another --listen ADDR:PORT");
}

HttpServer::~HttpServer() {
  if (m_server)
    module().close(m_server);
}

void HttpServer::serve() {
  if (module().run(m_server) != 0)
    throw Error(ExitCode::unavailable, "the HTTP server stopped unexpectedly");
}

void HttpServer::stop() {
  module().stop(m_server);
}

}  // namespace clk::serve
