// The ownership and mode check of a config file found on the search path.
#include "config/file_trust.hpp"

#include <cstdio>
#include <pwd.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include "error.hpp"

namespace clk::config {

namespace {

std::string user_of(uid_t uid) {
  std::string id = "uid " + std::to_string(uid);
  if (auto* entry = ::getpwuid(uid); entry && entry->pw_name)
    return std::string(entry->pw_name) + " (" + id + ")";
  return id;
}

}  // namespace

void check_config_file_ownership(const std::filesystem::path& file) {
  struct stat info {};
  if (::stat(file.c_str(), &info) != 0)
    return;
  const uid_t self = ::geteuid();
  if (info.st_uid != self && info.st_uid != 0) {
    throw Error(ExitCode::config,
                "refusing the config file " + file.string() + ": it belongs to " +
                    user_of(info.st_uid) + ", not to you (" + user_of(self) +
                    ") or root, and it chooses the database your jobs lock against; chown it, "
                    "or name a config file with --config or CLOCK_CONFIG");
  }
  if ((info.st_mode & 022) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(info.st_mode & 07777));
    throw Error(ExitCode::config, "refusing the config file " + file.string() +
                                      ": its group or others may write it (mode " + mode +
                                      "), and it chooses the database your jobs lock against; "
                                      "chmod go-w " +
                                      file.string());
  }
}

}  // namespace clk::config
