// What to do about MariaDB's "Access denied" (error 1045): a password that
// was not sent (where to put it, for which login), or an anonymous account
// that shadows the login on this host.
#pragma once

#include <string>
#include <string_view>

#include "store/mariadb_url.hpp"

namespace clk::store::mariadb {

// The hint appended to the server's message ("; …"), from what the message
// says: the login and host it names and whether a password was used.
std::string access_denied_hint(std::string_view server_message, const MariadbUrl& url);

}  // namespace clk::store::mariadb
