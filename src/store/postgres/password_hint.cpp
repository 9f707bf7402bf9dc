// The ~/.pgpass line a login without a password needs.
#include "store/postgres/password_hint.hpp"

#include <cstdlib>
#include <libpq-fe.h>
#include <map>
#include <memory>
#include <pwd.h>
#include <unistd.h>

namespace clk::store::postgres {

namespace {

// The options the URL or keyword string sets, by libpq's own parser.
std::map<std::string, std::string> options_of(const std::string& url) {
  std::map<std::string, std::string> options;
  char* error = nullptr;
  std::unique_ptr<PQconninfoOption, decltype(&PQconninfoFree)> parsed(
      PQconninfoParse(url.c_str(), &error), &PQconninfoFree);
  if (error)
    PQfreemem(error);
  if (!parsed)
    return options;
  for (auto* option = parsed.get(); option->keyword; ++option) {
    if (option->val && *option->val)
      options[option->keyword] = option->val;
  }
  return options;
}

// libpq's default user: the name of the effective user.
std::string os_user() {
  if (const passwd* entry = getpwuid(geteuid()); entry && entry->pw_name)
    return entry->pw_name;
  return "USER";
}

// A .pgpass field: ':' and '\' are escaped with '\'.
std::string pgpass_field(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == ':' || c == '\\')
      out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string missing_password_hint(const std::string& url, const Getenv& getenv_in) {
  Getenv getenv = getenv_in ? getenv_in : [](const char* name) { return std::getenv(name); };
  auto options = options_of(url);
  auto pick = [&](const char* key, const char* variable, const std::string& otherwise) {
    if (auto it = options.find(key); it != options.end())
      return it->second;
    if (const char* value = getenv(variable); value && *value)
      return std::string(value);
    return otherwise;
  };
  std::string user = pick("user", "PGUSER", os_user());
  std::string database = pick("dbname", "PGDATABASE", user);
  std::string host = pick("host", "PGHOST", "");
  host = host.substr(0, host.find(','));  // the first of a list; a line may say * for any
  // libpq looks up the default socket folder (Debian's) as "localhost", and
  // any other socket folder by its path.
  if (host.empty() || host == "/var/run/postgresql" || host == "/run/postgresql")
    host = "localhost";
  std::string port = pick("port", "PGPORT", "5432");
  port = port.substr(0, port.find(','));
  if (port.empty())
    port = "5432";
  std::string file = options.count("passfile") ? options["passfile"]
                     : getenv("PGPASSFILE")    ? std::string(getenv("PGPASSFILE"))
                                               : std::string("~/.pgpass");
  return "; no password was sent for login " + user + ": add the line '" + pgpass_field(host) +
         ":" + port + ":" + pgpass_field(database) + ":" + pgpass_field(user) + ":PASSWORD' to " +
         file + " (mode 0600, of the user who runs clock) with that login's password";
}

}  // namespace clk::store::postgres
