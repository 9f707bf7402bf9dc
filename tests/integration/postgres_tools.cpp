// The PostgreSQL tests' tools: see postgres_tools.hpp.
#include "postgres_tools.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sstream>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <doctest/doctest.h>

#include "common_helpers.hpp"

namespace clk::test::pg {

namespace {

bool is_uri(const std::string& url) {
  return url.rfind("postgres://", 0) == 0 || url.rfind("postgresql://", 0) == 0;
}

// The keyword=value pairs of a libpq keyword string, values unquoted.
std::vector<std::pair<std::string, std::string>> keywords(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t i = 0;
  auto skip_space = [&] {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
      ++i;
  };
  for (;;) {
    skip_space();
    if (i >= text.size())
      return out;
    std::size_t start = i;
    while (i < text.size() && text[i] != '=' && !std::isspace(static_cast<unsigned char>(text[i])))
      ++i;
    std::string key = text.substr(start, i - start);
    skip_space();
    if (i < text.size() && text[i] == '=')
      ++i;
    skip_space();
    std::string value;
    if (i < text.size() && text[i] == '\'') {
      for (++i; i < text.size() && text[i] != '\''; ++i) {
        if (text[i] == '\\' && i + 1 < text.size())
          ++i;
        value += text[i];
      }
      ++i;
    } else {
      while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i])))
        value += text[i++];
    }
    out.emplace_back(key, value);
  }
}

std::string quoted_value(const std::string& value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\'' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "'";
}

[[noreturn]] void fail_pg_errno(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

}  // namespace

bool enabled() {
  return backend_name() == "postgres";
}

doctest::skip only_with_standby() {
  return doctest::skip(!enabled() || getenv_or("CLOCK_TEST_PG_STANDBY_URL", "").empty());
}

std::string primary_url(const TestEnv* env) {
  std::string url = getenv_or("CLOCK_TEST_PG_PRIMARY_URL", "");
  return env ? with_dbname(url, dbname_of(env->url())) : url;
}

std::string standby_url(const TestEnv* env) {
  std::string url = getenv_or("CLOCK_TEST_PG_STANDBY_URL", "");
  return env ? with_dbname(url, dbname_of(env->url())) : url;
}

std::string dbname_of(const std::string& url) {
  if (is_uri(url)) {
    auto authority = url.find("://") + 3;
    auto slash = url.find('/', authority);
    if (slash == std::string::npos)
      return "";
    return url.substr(slash + 1, url.find('?', slash) - slash - 1);
  }
  for (const auto& [key, value] : keywords(url)) {
    if (key == "dbname")
      return value;
  }
  return "";
}

std::string with_dbname(const std::string& url, const std::string& dbname) {
  if (is_uri(url)) {
    auto authority = url.find("://") + 3;
    auto query = url.find('?', authority);
    auto slash = url.find('/', authority);
    std::string tail = query == std::string::npos ? "" : url.substr(query);
    return url.substr(0, std::min({slash, query, url.size()})) + "/" + dbname + tail;
  }
  std::string out;
  for (const auto& [key, value] : keywords(url)) {
    if (key != "dbname")
      out += key + "=" + quoted_value(value) + " ";
  }
  return out + "dbname=" + quoted_value(dbname);
}

std::string pgbouncer_url(const TestEnv& env) {
  std::string base = getenv_or("CLOCK_TEST_PGBOUNCER_URL", "");
  if (base.empty())
    return "";
  return with_dbname(base, dbname_of(env.url()));
}

// ---------------------------------------------------------------- PsqlSession

PsqlSession::PsqlSession(const TestEnv& env, const std::string& url) {
  // stdin is a socket, so that writing to a psql that has died fails with
  // EPIPE (MSG_NOSIGNAL) instead of killing the test with SIGPIPE. Our ends
  // are close-on-exec: the clock processes the test starts meanwhile must not
  // keep psql's stdin open.
  int in_pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in_pair) != 0)
    fail_pg_errno("socketpair");
  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0)
    fail_pg_errno("pipe2");

  Command command =
      env.command({"psql", "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-d", url});
  std::string program = "psql";
  {
    std::stringstream dirs(command.env["PATH"]);
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
      if (access((dir + "/psql").c_str(), X_OK) == 0) {
        program = dir + "/psql";
        break;
      }
    }
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pair[1], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 2);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &all);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setflags(&attributes,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> argv;
  for (auto& arg : command.argv)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (const auto& [key, value] : command.env)
    env_strings.push_back(key + "=" + value);
  std::vector<char*> envp;
  for (auto& entry : env_strings)
    envp.push_back(entry.data());
  envp.push_back(nullptr);
  int error = posix_spawn(&m_pid, program.c_str(), &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close(in_pair[1]);
  close(out_pipe[1]);
  m_in = in_pair[0];
  m_out = out_pipe[0];
  if (error != 0) {
    errno = error;
    fail_pg_errno("cannot spawn " + program);
  }
}

PsqlSession::~PsqlSession() {
  if (m_in >= 0)
    close(m_in);
  if (m_pid > 0 && !m_exited) {
    kill(-m_pid, SIGKILL);
    kill(m_pid, SIGKILL);
    int status = 0;
    waitpid(m_pid, &status, 0);
  }
  if (m_out >= 0)
    close(m_out);
}

std::string PsqlSession::read_until(const std::string& marker, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    auto at = m_buffer.find(marker + "\n");
    if (at != std::string::npos) {
      std::string before = m_buffer.substr(0, at);
      m_buffer.erase(0, at + marker.size() + 1);
      return before;
    }
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left <= 0ms) {
      throw std::runtime_error("psql did not finish within " + std::to_string(timeout.count()) +
                               " ms; it printed:\n" + m_transcript);
    }
    pollfd fd{m_out, POLLIN, 0};
    int ready = poll(&fd, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR)
      fail_pg_errno("poll on psql's output");
    if (ready <= 0)
      continue;
    char chunk[4096];
    ssize_t n = read(m_out, chunk, sizeof chunk);
    if (n < 0 && errno != EINTR)
      fail_pg_errno("read from psql");
    if (n == 0) {
      throw std::runtime_error("psql exited before finishing the statement; it printed:\n" +
                               m_transcript);
    }
    if (n > 0) {
      m_buffer.append(chunk, static_cast<std::size_t>(n));
      m_transcript.append(chunk, static_cast<std::size_t>(n));
    }
  }
}

std::string PsqlSession::execute(const std::string& sql, milliseconds timeout) {
  // psql runs its input in order: the marker is echoed once `sql` is done.
  std::string marker = "__clock_test_step_" + std::to_string(++m_counter) + "__";
  // psql sends a statement only once it has read its semicolon.
  std::string statement = sql;
  while (!statement.empty() && std::isspace(static_cast<unsigned char>(statement.back())))
    statement.pop_back();
  if (!statement.empty() && statement.back() != ';' && statement.front() != '\\')
    statement += ';';
  std::string input = statement + "\n\\echo " + marker + "\n";
  for (std::size_t sent = 0; sent < input.size();) {
    ssize_t n = send(m_in, input.data() + sent, input.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      throw std::runtime_error("cannot write to psql (" + std::string(std::strerror(errno)) +
                               "); it printed:\n" + m_transcript);
    }
    sent += static_cast<std::size_t>(n);
  }
  std::string output = read_until(marker, timeout);
  while (!output.empty() && (output.back() == '\n' || output.back() == ' '))
    output.pop_back();
  return output;
}

int PsqlSession::finish(milliseconds timeout) {
  if (m_in >= 0) {
    close(m_in);
    m_in = -1;
  }
  const auto deadline = Clock::now() + timeout;
  int status = 0;
  while (!m_exited) {
    pid_t r = waitpid(m_pid, &status, WNOHANG);
    if (r == m_pid) {
      m_exited = true;
      break;
    }
    if (Clock::now() >= deadline) {
      kill(-m_pid, SIGKILL);
      waitpid(m_pid, &status, 0);
      m_exited = true;
      return -1;
    }
    std::this_thread::sleep_for(10ms);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// ---------------------------------------------------------------- the server

Command psql_command(const TestEnv& env, const std::string& url, const std::string& sql) {
  return env.command({"psql", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql});
}

Result psql(const TestEnv& env, const std::string& url, const std::string& sql) {
  return run(psql_command(env, url, sql), env.path("output"));
}

Result psql(const TestEnv& env, const std::string& sql) {
  return psql(env, env.url(), sql);
}

void install_roles(const TestEnv& env, const std::vector<std::string>& psql_variables) {
  REQUIRE_EXIT(env.clock({"init"}), 0);
  std::vector<std::string> argv = {"psql", "-X",          "-q", "-v", "ON_ERROR_STOP=1",
                                   "-v",   "schema=clock"};
  for (const auto& variable : psql_variables) {
    argv.push_back("-v");
    argv.push_back(variable);
  }
  argv.insert(argv.end(), {"-d", env.url(), "-f",
                           std::string(CLOCK_TEST_HELPERS_DIR) + "/../../sql/postgres/roles.sql"});
  REQUIRE_EXIT(run(env.command(argv), env.path("output")), 0);
}

Result pg_ctl(const TestEnv& env, const std::vector<std::string>& args, milliseconds timeout) {
  std::string script = getenv_or("CLOCK_TEST_PG_CTL", "");
  if (script.empty())
    script = std::string(CLOCK_TEST_HELPERS_DIR) + "/pg-ctl.sh";
  std::vector<std::string> argv = {"bash", script};
  argv.insert(argv.end(), args.begin(), args.end());
  // The harness passes no CLOCK_* variable on: pg-ctl.sh needs these.
  std::map<std::string, std::string> extra;
  for (const char* name :
       {"CLOCK_TEST_PG_BIN", "CLOCK_TEST_PG_DATA", "CLOCK_TEST_PG_LOG", "CLOCK_TEST_PG_RUN_AS",
        "CLOCK_TEST_PG_STANDBY_DATA", "CLOCK_TEST_PG_STANDBY_URL"}) {
    extra[name] = getenv_or(name, "");
  }
  return run(env.command(argv, extra), env.path("output"), timeout);
}

bool server_answers(const TestEnv& env) {
  Result result = run(env.command({"psql", "-X", "-q", "-A", "-t", "-d",
                                   getenv_or("CLOCK_TEST_PG_URL", ""), "-c", "select 1"}),
                      env.path("output"), 20s);
  return result.status == 0 && result.out.find('1') != std::string::npos;
}

ServerRestorer::~ServerRestorer() {
  try {
    if (server_answers(m_env))
      return;
    std::cerr << "the PostgreSQL server is down after the test: starting it again\n";
    Result started = pg_ctl(m_env, {"start"});
    if (started.status != 0)
      std::cerr << "pg-ctl.sh start failed:\n" << started.describe() << "\n";
    if (!await([&] { return server_answers(m_env); }, 60s, 200ms)) {
      std::cerr << "the PostgreSQL server does not answer 60 s after a restart: the tests that "
                   "follow will fail\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "could not restore the PostgreSQL server: " << e.what() << "\n";
  }
}

}  // namespace clk::test::pg
