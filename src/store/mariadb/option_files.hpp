// The MariaDB option files that Connector/C reads for clock (the [client]
// and [clock] groups, or the URL's option-group): each is checked before a
// connection reads it, as libpq checks ~/.pgpass (docs/mariadb.md, "When
// something goes wrong"). Whoever can write one chooses plugin-dir and default-auth, so the
// code that runs inside clock; whoever can read one holding a password has
// the login.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace clk::store::mariadb {

// The files Connector/C reads, in its order: only `defaults_file` when the
// URL names one, else /etc/my.cnf, /etc/mysql/my.cnf, $MARIADB_HOME/my.cnf
// (or $MYSQL_HOME/my.cnf) and ~/.my.cnf; each followed by what its
// !include and !includedir lines name. Files that are not there are left out.
std::vector<std::filesystem::path> option_files(const std::optional<std::string>& defaults_file);

// Throws clk::Error(config, 78) naming the file and the fix when an option
// file (or a folder that !includedir names) belongs to a user other than the
// caller or root, or its group or others may write it. Warns, once per file
// and process, when one that holds a password is readable by its group or
// others.
void check_option_files(const std::optional<std::string>& defaults_file);

}  // namespace clk::store::mariadb
