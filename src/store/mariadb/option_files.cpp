// See option_files.hpp. The list mirrors Connector/C's own search
// (libmariadb/ma_default.c): the same folders, the same environment
// variables, the same include lines.
#include "store/mariadb/option_files.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <pwd.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "error.hpp"

namespace clk::store::mariadb {

namespace fs = std::filesystem;

namespace {

std::string trimmed(const std::string& line) {
  const auto begin = line.find_first_not_of(" \t\r");
  if (begin == std::string::npos)
    return "";
  const auto end = line.find_last_not_of(" \t\r");
  return line.substr(begin, end - begin + 1);
}

// "!include FILE" / "!includedir DIR": what the line names, if anything.
std::optional<std::string> directive(const std::string& line, const std::string& name) {
  if (!line.starts_with(name) || line.size() == name.size() ||
      !std::isspace(static_cast<unsigned char>(line[name.size()])))
    return std::nullopt;
  return trimmed(line.substr(name.size()));
}

struct Reader {
  std::vector<fs::path> files;
  std::set<std::string> seen;

  void read(const fs::path& file) {
    if (::access(file.c_str(), R_OK) != 0 || !seen.insert(file.string()).second)
      return;
    files.push_back(file);
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
      line = trimmed(line);
      if (auto folder = directive(line, "!includedir")) {
        read_folder(*folder);
      } else if (auto included = directive(line, "!include")) {
        read(*included);
      }
    }
  }

  void read_folder(const fs::path& folder) {
    std::error_code error;
    std::vector<fs::path> found;
    for (const auto& entry : fs::directory_iterator(folder, error)) {
      if (entry.path().extension() == ".cnf")
        found.push_back(entry.path());
    }
    std::sort(found.begin(), found.end());
    for (const auto& file : found)
      read(file);
  }
};

std::string mode_text(const struct stat& info) {
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(info.st_mode & 07777));
  return mode;
}

std::string user_of(uid_t uid) {
  std::string id = "uid " + std::to_string(uid);
  if (auto* entry = ::getpwuid(uid); entry && entry->pw_name)
    return std::string(entry->pw_name) + " (" + id + ")";
  return id;
}

// What Connector/C reads from the file can load a plugin: so only its
// owner (the caller or root) may write it.
void check_writers(const fs::path& path, const struct stat& info, const char* what) {
  const uid_t self = ::geteuid();
  if (info.st_uid != self && info.st_uid != 0) {
    throw Error(ExitCode::config,
                std::string("refusing the MariaDB option ") + what + " " + path.string() +
                    ": it belongs to " + user_of(info.st_uid) + ", not to you (" + user_of(self) +
                    ") or root, and what it says (plugin-dir, default-auth) runs inside clock; "
                    "chown it, or name another with the URL's ?defaults-file=");
  }
  if ((info.st_mode & 022) != 0) {
    throw Error(ExitCode::config,
                std::string("refusing the MariaDB option ") + what + " " + path.string() +
                    ": its group or others may write it (mode " + mode_text(info) +
                    "), and what it says (plugin-dir, default-auth) runs inside clock; "
                    "chmod go-w " +
                    path.string());
  }
}

// A `password = …` line in any group: the mariadb client's and ours.
bool holds_password(const fs::path& file) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    line = trimmed(line);
    const auto equals = line.find('=');
    if (equals == std::string::npos || trimmed(line.substr(equals + 1)).empty())
      continue;
    std::string key = trimmed(line.substr(0, equals));
    std::transform(key.begin(), key.end(), key.begin(),
                   [](unsigned char c) { return c == '_' ? '-' : std::tolower(c); });
    if (key == "password" || key == "loose-password")
      return true;
  }
  return false;
}

void warn_once(const fs::path& file, const struct stat& info) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard lock(mutex);
  if (!warned.insert(file.string()).second)
    return;
  spdlog::warn(
      "the MariaDB option file {} holds a password and its group or others may read it (mode "
      "{}): anyone on this host can log in as clock does; chmod 600 {}",
      file.string(), mode_text(info), file.string());
}

}  // namespace

std::vector<fs::path> option_files(const std::optional<std::string>& defaults_file) {
  Reader reader;
  if (defaults_file && !defaults_file->empty()) {
    reader.read(*defaults_file);
    return reader.files;
  }
  for (const char* folder : {"/etc", "/etc/mysql"})
    reader.read(fs::path(folder) / "my.cnf");
  const char* home_dir = std::getenv("MARIADB_HOME");
  if (!home_dir)
    home_dir = std::getenv("MYSQL_HOME");
  if (home_dir && *home_dir)
    reader.read(fs::path(home_dir) / "my.cnf");
  if (const char* home = std::getenv("HOME"); home && *home)
    reader.read(fs::path(home) / ".my.cnf");
  return reader.files;
}

void check_option_files(const std::optional<std::string>& defaults_file) {
  auto files = option_files(defaults_file);
  for (const auto& file : files) {
    struct stat info {};
    if (::stat(file.c_str(), &info) != 0)
      continue;
    check_writers(file, info, "file");
    if ((info.st_mode & 077) != 0 && holds_password(file))
      warn_once(file, info);
    // The folders its !includedir lines name: whoever may add a file there
    // writes options too.
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
      if (auto folder = directive(trimmed(line), "!includedir")) {
        struct stat folder_info {};
        if (::stat(folder->c_str(), &folder_info) == 0)
          check_writers(*folder, folder_info, "folder");
      }
    }
  }
}

}  // namespace clk::store::mariadb
