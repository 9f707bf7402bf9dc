// Database URL → backend, SQLite path, and the password-masked form.
#include "store/database_url.hpp"

#include "error.hpp"
#include "store/mariadb_url.hpp"
#include "util/password.hpp"

namespace clk::store {

namespace {

bool starts_with(const std::string& text, std::string_view prefix) {
  return text.rfind(prefix, 0) == 0;
}

}  // namespace

Backend backend_of(const std::string& url) {
  if (starts_with(url, "sqlite:"))
    return Backend::sqlite;
  if (starts_with(url, "postgresql://") || starts_with(url, "postgres://"))
    return Backend::postgres;
  if (is_mariadb_url(url))
    return Backend::mariadb;
  // A libpq keyword string: "host=… dbname=…" (or "service=…").
  if (url.find('=') != std::string::npos && url.find("://") == std::string::npos) {
    return Backend::postgres;
  }
  throw Error(ExitCode::config, "unsupported database URL '" + mask_password(url) +
                                    "': use sqlite:/path/file.db, postgresql://… (or "
                                    "postgres://…), mysql://… (or mariadb://…) or a libpq "
                                    "keyword string like 'host=db dbname=clock'");
}

const char* backend_name(Backend backend) {
  switch (backend) {
    case Backend::sqlite:
      return "SQLite";
    case Backend::postgres:
      return "PostgreSQL";
    case Backend::mariadb:
      return "MariaDB";
  }
  return "?";
}

std::string sqlite_path_of(const std::string& url) {
  std::string path = url.substr(std::string_view("sqlite:").size());
  if (starts_with(path, "//")) {
    path.erase(0, 2);
    if (!starts_with(path, "/")) {
      throw Error(ExitCode::config, "invalid SQLite URL '" + url +
                                        "': after sqlite:// comes an absolute path, as in "
                                        "sqlite:///var/lib/clock/clock.db");
    }
  }
  if (path.empty()) {
    throw Error(ExitCode::config, "invalid SQLite URL '" + url + "': it names no file");
  }
  // SQLite would stop at the NUL and open another file (the config file's
  // "\u0000" can put one there).
  if (path.find('\0') != std::string::npos) {
    throw Error(ExitCode::config, "invalid SQLite URL: the path holds a NUL byte");
  }
  return path;
}

std::string mask_password(const std::string& url) {
  return util::mask_passwords(url, util::Words::until_keyword);
}

}  // namespace clk::store
