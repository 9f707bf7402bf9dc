// The ownership and modes of a SQLite database's folder and files, checked
// (and, for the per-user default, set) before SQLite opens them. A reader of
// the -shm file can take the byte locks every writer needs (SQLite reports
// "locking protocol" after 10 s), and the owner of the file controls the lock
// table: so the default is private, and a stranger's file is not used.
#include "store/sqlite/file_trust.hpp"

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <pwd.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include <spdlog/spdlog.h>

#include "error.hpp"

namespace clk::store::sqlite {

namespace {

namespace fs = std::filesystem;

// The files SQLite keeps beside the database, all given the database's mode.
constexpr const char* k_suffixes[] = {"", "-wal", "-shm", "-journal"};

std::string user_of(uid_t uid) {
  std::string id = "uid " + std::to_string(uid);
  if (auto* entry = ::getpwuid(uid); entry && entry->pw_name)
    return std::string(entry->pw_name) + " (" + id + ")";
  return id;
}

std::string octal(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// Creates the missing folders of `folder`, outermost first, each 0700 (the
// XDG spec's mode for a base directory it creates). Returns false if one
// cannot be made: make_sqlite_store reports that, with what to do.
bool create_private_folders(const fs::path& folder) {
  std::vector<fs::path> missing;
  struct stat info {};
  for (fs::path at = folder; !at.empty() && ::stat(at.c_str(), &info) != 0; at = at.parent_path()) {
    if (errno != ENOENT)
      return false;
    missing.push_back(at);
    if (at == at.parent_path())
      break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0700) != 0 && errno != EEXIST)
      return false;
    ::chmod(it->c_str(), 0700);  // the umask may have taken the owner's bits
  }
  return true;
}

[[noreturn]] void refuse_foreign_default(const fs::path& what, const struct stat& info) {
  throw Error(ExitCode::local_database,
              "refusing the default SQLite database: " + what.string() + " belongs to " +
                  user_of(info.st_uid) + ", not to you (" + user_of(::geteuid()) +
                  "), and whoever owns it controls your locks; chown it to yourself if it is "
                  "yours, or name a database with --database or CLOCK_DATABASE_URL");
}

// Narrows `what` to `mode` if group or others have any access, with a line
// saying so (a database created before the default was private).
void narrow(const fs::path& what, const struct stat& info, mode_t mode) {
  if ((info.st_mode & 077) == 0)
    return;
  if (::chmod(what.c_str(), mode) == 0) {
    spdlog::warn(
        "made {} private to its user, mode {} (was {}): the default database is yours "
        "alone (a shared one belongs in a group folder: man clock, FILES)",
        what.string(), octal(mode), octal(info.st_mode));
  }
}

void prepare_private_default(const fs::path& path, const fs::path& folder) {
  if (!create_private_folders(folder))
    return;
  struct stat info {};
  if (::stat(folder.c_str(), &info) != 0)
    return;
  if (info.st_uid != ::geteuid())
    refuse_foreign_default(folder, info);
  narrow(folder, info, 0700);
  for (const char* suffix : k_suffixes) {
    fs::path file = path.string() + suffix;
    if (::stat(file.c_str(), &info) != 0)
      continue;
    if (info.st_uid != ::geteuid())
      refuse_foreign_default(file, info);
    narrow(file, info, 0600);
  }
  // An empty file 0600: SQLite gives the -wal, -shm and -journal files it
  // creates the database's mode, and makes the database in the empty file.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0) {
    ::fchmod(fd, 0600);
    ::close(fd);
  }
}

// In a folder anyone may write to, anyone may create the database's name
// (or its -shm) before the caller does; its owner can then read, rewrite or
// lock the table. Root's files and the caller's own are trusted.
void refuse_planted(const fs::path& path, const fs::path& folder) {
  struct stat folder_info {};
  if (::stat(folder.c_str(), &folder_info) != 0 || (folder_info.st_mode & S_IWOTH) == 0)
    return;
  const uid_t self = ::geteuid();
  for (const char* suffix : k_suffixes) {
    fs::path file = path.string() + suffix;
    struct stat info {};
    for (auto* look : {&::lstat, &::stat}) {
      if (look(file.c_str(), &info) != 0 || info.st_uid == self || info.st_uid == 0)
        continue;
      throw Error(ExitCode::local_database,
                  "refusing the SQLite database " + path.string() + ": " + file.string() +
                      " belongs to " + user_of(info.st_uid) + " in the world-writable folder " +
                      folder.string() +
                      ", where anyone can create it, and its owner controls your locks; use a "
                      "folder of your own, or a group folder for a shared database (man clock, "
                      "FILES)");
    }
  }
}

}  // namespace

void prepare_database_file(const fs::path& path, bool private_default) {
  const fs::path folder = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  if (private_default)
    prepare_private_default(path, folder);
  else
    refuse_planted(path, folder);
}

}  // namespace clk::store::sqlite
