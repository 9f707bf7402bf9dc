// The starter config file of `clock config --init`.
#include "config/starter_file.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include <toml++/toml.h>

#include "error.hpp"
#include "util/password.hpp"

namespace clk::config {

namespace fs = std::filesystem;

namespace {

// A TOML basic string: quotes and backslashes escaped.
std::string toml_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

// Whether a TOML table sets a value, in it or in a table under it.
bool sets_a_value(const toml::table& table) {
  for (auto&& [key, node] : table) {
    const toml::table* inner = node.as_table();
    if (!inner || sets_a_value(*inner))
      return true;
  }
  return false;
}

// Whether the file sets any key. Comments, blank lines and table headers
// set nothing: the packaged /etc/clock/clock.toml is every key commented out
// under its table's header. A file that is not TOML counts as set: it is
// someone's, and only they know what it meant.
bool sets_anything(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  try {
    return sets_a_value(toml::parse(text.str(), file.string()));
  } catch (const toml::parse_error&) {
    return true;
  }
}

}  // namespace

std::string starter_text(const std::optional<std::string>& database_url) {
  std::string database = database_url
                             ? "database = " + toml_string(*database_url) + "\n"
                             : "#database = \"postgresql://clock_host@db.example/clock\"\n";
  return "# clock.toml, written by `clock config --init`: the keys most set-ups change.\n"
         "# Every key, with its default and what it does: man clock (FILES), or\n"
         "# config/clock.toml in the source tree. `clock config` shows what is in effect\n"
         "# and where each value came from.\n"
         "#\n"
         "# database: the lock table. sqlite:/path/file.db (one host),\n"
         "# postgresql://user@host/db or mariadb://user@host/db (many hosts). Keep the\n"
         "# password in ~/.pgpass or ~/.my.cnf [clock], not here.\n" +
         database +
         "#namespace = \"dc-eu1\"\n"
         "#log_level = \"warn\"\n"
         "\n"
         "[lock]\n"
         "#ttl = \"90s\"\n"
         "\n"
         "[gc]\n"
         "#history_retention = \"90d\"\n";
}

std::string write_starter_file(const fs::path& file,
                               const std::optional<std::string>& database_url) {
  std::error_code error;
  bool exists = fs::exists(file, error);
  if (exists && sets_anything(file)) {
    throw Error(ExitCode::config, "not writing " + file.string() +
                                      ": it already sets keys (or is not TOML); edit it, or "
                                      "remove it first");
  }
  if (file.has_parent_path() && !fs::exists(file.parent_path(), error)) {
    fs::create_directories(file.parent_path(), error);
    if (error) {
      throw Error(ExitCode::config, "cannot create the folder " + file.parent_path().string() +
                                        ": " + error.message());
    }
  }
  const bool secret = database_url && util::has_password(*database_url);
  const mode_t mode = secret ? 0600 : 0644;
  // Written beside the file and renamed over it: a reader never sees half a
  // file, and the mode is right from the first byte.
  fs::path temporary = file;
  temporary += ".new";
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) {
    throw Error(ExitCode::config,
                "cannot write " + temporary.string() + ": " + std::strerror(errno));
  }
  std::string text = starter_text(database_url);
  bool written = ::fchmod(fd, mode) == 0 &&
                 ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  written = ::close(fd) == 0 && written;
  if (!written || ::rename(temporary.c_str(), file.c_str()) != 0) {
    std::string why = std::strerror(errno);
    ::unlink(temporary.c_str());
    throw Error(ExitCode::config, "cannot write " + file.string() + ": " + why);
  }
  std::ostringstream mode_text;
  mode_text << std::oct << mode;
  return std::string(exists ? "replaced " : "wrote ") + file.string() + " (mode 0" +
         mode_text.str() + (database_url ? ", database set" : "") + ")";
}

}  // namespace clk::config
