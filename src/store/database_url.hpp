// What a database URL names (man clock, DATABASE URLS): the backend, the SQLite file, and the
// form with its password masked for anything shown.
#pragma once

#include <string>

namespace clk::store {

enum class Backend { sqlite, postgres, mariadb };

// "SQLite", "PostgreSQL", "MariaDB": for messages and -v.
const char* backend_name(Backend backend);

// Which backend a URL names; throws clk::Error(config) for anything else.
Backend backend_of(const std::string& url);

// The SQLite file path of a sqlite: URL.
std::string sqlite_path_of(const std::string& url);

// Masks the password in a URL or keyword string, for logs and messages: what
// libpq takes as the password, and the words of one typed with spaces.
std::string mask_password(const std::string& url);

}  // namespace clk::store
