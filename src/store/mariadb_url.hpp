// A mysql:// or mariadb:// URL (man clock, DATABASE URLS) taken apart into what MariaDB
// Connector/C is given: the arguments of mysql_real_connect and its options.
// Parsed in clock itself (no libmariadb here), so that a bad URL is a
// configuration error (78) before any module is loaded, and unit-testable.
//
//   mysql://[user[:password]@][host][:port][,host[:port]…]/database[?key=value&…]
//   mariadb://…   the same
//
// Several hosts are the nodes of one multi-writer Galera cluster: a
// connection goes to the first that answers, and to the next when its node
// is lost (store/mariadb/connection.hpp).
//
// user, password, database and every value are percent-decoded; a host in
// brackets is an IPv6 address. What the URL leaves out is left to the
// client's option files (~/.my.cnf [client], as libpq's .pgpass and service
// files are): a URL without a password uses the file's. The query keys, with
// '_' and '-' alike:
//   socket=PATH                  unix socket (host empty or localhost)
//   group=NAME                   option-file group read after [client]
//                                (default "clock", so [clock] holds clock's own)
//   defaults-file=PATH           read this option file instead of the defaults
//   ssl=true|false               require TLS (MYSQL_OPT_SSL_ENFORCE)
//   ssl-verify-server-cert=true|false
//   ssl-ca, ssl-capath, ssl-cert, ssl-key, ssl-cipher, ssl-crl, ssl-crlpath,
//   tls-version                  passed through as the client's --ssl-* options
//   password=SECRET              as in the user info (masked like it)
// Any other key is a configuration error naming it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clk::store {

struct MariadbTls {
  std::optional<bool> enforce;             // ssl=
  std::optional<bool> verify_server_cert;  // ssl-verify-server-cert=
  std::optional<std::string> ca, capath, cert, key, cipher, crl, crlpath, version;
};

// One server of the URL.
struct MariadbHost {
  // nullopt: not in the URL, so Connector/C's option files or defaults decide.
  std::optional<std::string> name;
  unsigned port = 0;  // 0: the option files' or 3306

  // "name:port" as an operator wrote it, for messages ("localhost" for none).
  std::string label() const;
};

struct MariadbUrl {
  // nullopt: not in the URL, so Connector/C's option files or defaults decide.
  std::optional<std::string> user;
  std::optional<std::string> password;
  // At least one; in the URL's order.
  std::vector<MariadbHost> hosts{MariadbHost{}};
  std::string database;
  std::optional<std::string> socket;
  std::string option_group = "clock";
  std::optional<std::string> defaults_file;
  MariadbTls tls;
};

// True for a mysql:// or mariadb:// URL.
bool is_mariadb_url(std::string_view url);

// Throws clk::Error(config) saying what is wrong, with the password masked.
MariadbUrl parse_mariadb_url(const std::string& url);

// The database names clock accepts: [A-Za-z0-9_$-], at most 64 bytes, so
// one can be quoted with backticks in DDL without escaping.
bool is_plain_database_name(std::string_view name);

}  // namespace clk::store
