// The connection string clock hands to libpq, and how a connection target is
// named in messages. The user's URL or keyword string is passed through
// unchanged (multi-host lists, target_session_attrs, sslmode, service and
// password files all stay libpq's business); clock only appends defaults for
// the time-outs it needs and the user did not set. No I/O, no libpq calls.
#pragma once

#include <chrono>
#include <functional>
#include <string>

namespace clk::store::postgres {

// Reads an environment variable; nullptr when unset (std::getenv by default).
using Getenv = std::function<const char*(const char*)>;

// `url` plus, for each setting neither the string nor the environment gives:
// connect_timeout (seconds, from `connect_timeout`, so an unreachable server
// fails fast), and TCP keepalives and tcp_user_timeout, so that a call
// stuck on a dead connection (a host gone without a reset) fails within
// about half a minute and the next one reconnects. With a service
// (service=… or PGSERVICE) nothing is added: the service file decides.
std::string with_defaults(const std::string& url, std::chrono::milliseconds connect_timeout,
                          const Getenv& getenv = nullptr);

// The hosts and ports a URL or keyword string names, for messages:
// "db1:5432,db2:5433", falling back on PGHOST/PGPORT and libpq's defaults.
// Never includes the user name or password.
std::string describe_target(const std::string& url, const Getenv& getenv = nullptr);

// A libpq error message on one line: whitespace runs (libpq's "\n\t")
// become single spaces, trailing whitespace is dropped.
std::string one_line(const std::string& message);

}  // namespace clk::store::postgres
