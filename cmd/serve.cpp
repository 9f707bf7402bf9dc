// clock serve: the read-only status page, its JSON and /metrics over HTTP,
// until SIGINT or SIGTERM.
#include <csignal>
#include <filesystem>
#include <malloc.h>
#include <pthread.h>
#include <thread>

#include <spdlog/spdlog.h>

#include "cmd/commands.hpp"
#include "serve/http_module.hpp"
#include "serve/site.hpp"
#include "store/database_url.hpp"

namespace clk::cmd {

namespace {

// 127.0.0.1 only, unless --listen names another address.
constexpr const char* k_default_listen = "127.0.0.1:8437";
// At most this many connections at once, each on its own thread; when
// they are all open, the oldest one not being answered makes room
// (docs/serve.md, "Slow visitors").
constexpr int k_max_connections = 256;

struct Listen {
  std::string host;
  int port = 0;
};

// HOST:PORT, [IPv6]:PORT; port 0 takes any free port.
Listen parse_listen(const std::string& text) {
  auto colon = text.rfind(':');
  auto bad = [&] {
    return Error(ExitCode::usage,
                 "--listen " + text + ": expected ADDRESS:PORT, e.g. 127.0.0.1:8437 or [::1]:8437");
  };
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    throw bad();
  Listen listen;
  listen.host = text.substr(0, colon);
  if (listen.host.front() == '[' && listen.host.back() == ']')
    listen.host = listen.host.substr(1, listen.host.size() - 2);
  const std::string port = text.substr(colon + 1);
  if (port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5)
    throw bad();
  listen.port = std::stoi(port);
  if (listen.port > 65535)
    throw bad();
  return listen;
}

bool loopback(const std::string& host) {
  return host.starts_with("127.") || host == "::1" || host == "localhost";
}

}  // namespace

Action register_serve(CLI::App& app) {
  struct Options {
    std::string listen = k_default_listen;
    std::string refresh = "5s";
    std::optional<std::string> auth_file;
    int timeline_events = 10000;
  };
  auto options = std::make_shared<Options>();
  auto* command =
      app.add_subcommand("serve", "Serve a read-only status page, its JSON and /metrics over HTTP");
  command->add_option("--listen", options->listen,
                      std::string("ADDRESS:PORT to listen on (default ") + k_default_listen +
                          "; port 0: any free port)");
  command->add_option("--refresh", options->refresh,
                      "How often the database is read and the page refreshes (default 5s, "
                      "at least 1s)");
  command->add_option("--auth-file", options->auth_file,
                      "Ask for HTTP basic authentication: a file of user:password lines, "
                      "mode 0600");
  command
      ->add_option("--timeline-events", options->timeline_events,
                   "The newest history events the timeline reads per refresh (default 10000)")
      ->check(CLI::Range(100, 1'000'000));
  command->footer(
      "Pages: / (holders, waiters, overdue runs and a timeline of holds; its address keeps\n"
      "#zoom=15m..7d&prefix=P&host=H), /status.json (as clock status --format json, and\n"
      "\"database\"), /history.json?resource=PREFIX&since=D&limit=N\n"
      "(as clock history --format json), /timeline.json, /metrics (as clock status\n"
      "--format prometheus) and /healthz (no authentication). Read-only: it grants,\n"
      "releases and writes nothing, and shows no owner secret or password. The database\n"
      "is read once per --refresh period whatever the number of open pages.\n"
      "It prints the URL it serves on stdout, then serves until SIGINT or SIGTERM (exit 0).\n"
      "Exit status: 64 for a bad flag or an address it cannot listen on, 69 when the\n"
      "database or clock-serve.so is missing, 78 for a bad --auth-file.\n"
      "Examples:\n"
      "  clock serve                                  # http://127.0.0.1:8437/\n"
      "  clock serve --listen 0.0.0.0:8437 --auth-file /etc/clock/serve.auth");
  return [options](Context& context) {
    auto listen = parse_listen(options->listen);
    auto refresh = duration_flag("--refresh", options->refresh);
    if (refresh < std::chrono::seconds(1))
      throw Error(ExitCode::usage, "--refresh " + options->refresh + ": at least 1s");
    serve::SiteOptions site;
    if (options->auth_file)
      site.auth = serve::BasicAuth::from_file(*options->auth_file);
    if (context.settings.ns_given)
      site.ns = context.settings.ns;
    site.refresh = refresh;
    if (!loopback(listen.host) && !site.auth)
      spdlog::warn(
          "serving on {} without --auth-file: anyone who can reach it sees every lock "
          "holder's host and command; put it behind a proxy that authenticates",
          listen.host);
    // Two malloc arenas, not eight per core: the connection threads
    // allocate little, and each arena keeps its own free memory.
    mallopt(M_ARENA_MAX, 2);
    serve::SnapshotOptions snapshot_options;
    snapshot_options.ns = site.ns;
    snapshot_options.refresh = refresh;
    snapshot_options.timeline_events = options->timeline_events;
    snapshot_options.database = store::mask_password(context.settings.database_url);
    const auto& url = context.settings.database_url;
    snapshot_options.reopen_each_read = store::backend_of(url) == store::Backend::sqlite;
    const std::string sqlite_file =
        snapshot_options.reopen_each_read ? store::sqlite_path_of(url) : "";
    bool opened = false;
    serve::Snapshots snapshots(
        [&context, &sqlite_file, &opened] {
          // Once it was read, a SQLite file that is gone is an outage, not a
          // new empty database to create and show.
          if (opened && !sqlite_file.empty() && !std::filesystem::exists(sqlite_file))
            throw Error(ExitCode::unavailable,
                        "the SQLite file " + sqlite_file +
                            " is not there (removed or moved); read again every refresh");
          auto opened_store = context.open_store();
          opened = true;
          return opened_store;
        },
        snapshot_options);
    // The first read now: a database that cannot be read is an error at
    // start, not a page of errors later.
    snapshots.current();

    // Signals are taken by one thread (sigwait), never by the server's.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    serve::HttpServer server(
        listen.host, listen.port, k_max_connections,
        [&](const serve::Request& request) { return serve::answer(snapshots, site, request); });
    const bool v6 = listen.host.find(':') != std::string::npos;
    print("listening on http://" + (v6 ? "[" + listen.host + "]" : listen.host) + ":" +
          std::to_string(server.port()) + "/\n");
    spdlog::info("serving {} (refresh {} ms)", store::mask_password(context.settings.database_url),
                 refresh.count());
    std::thread stopper([&] {
      int signal_number = 0;
      sigwait(&stop_signals, &signal_number);
      spdlog::info("signal {}: stopping", signal_number);
      server.stop();
    });
    try {
      server.serve();
    } catch (...) {
      pthread_kill(stopper.native_handle(), SIGTERM);
      stopper.join();
      throw;
    }
    stopper.join();
    return 0;
  };
}

}  // namespace clk::cmd
