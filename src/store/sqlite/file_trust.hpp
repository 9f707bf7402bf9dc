// Who may touch a SQLite database file before clock opens it (man clock, DATABASE URLS): the
// per-user default is private to its user, and a file another user put in a
// folder anyone may write to (/tmp) is not taken for the caller's own.
#pragma once

#include <filesystem>

namespace clk::store::sqlite {

// For the per-user default database (`private_default`): creates its missing
// folders 0700 and the file 0600 whatever the umask, narrows an existing
// folder to 0700 and files to 0600, and refuses a folder or file that another
// user owns. For a database the caller named: refuses one (or its -wal, -shm
// or -journal) that a user other than the caller or root owns in a
// world-writable folder. Throws clk::Error(local_database) saying why and what
// to do; a folder it cannot create is left for the store to report.
void prepare_database_file(const std::filesystem::path& path, bool private_default);

}  // namespace clk::store::sqlite
