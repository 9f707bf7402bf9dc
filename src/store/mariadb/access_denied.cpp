// The hint for MariaDB's error 1045.
#include "store/mariadb/access_denied.hpp"

namespace clk::store::mariadb {

namespace {

// The quoted text after `before` in the message, or "" ("Access denied for
// user 'clock_admin'@'localhost' (using password: NO)").
std::string quoted_after(std::string_view message, std::string_view before) {
  auto start = message.find(before);
  if (start == std::string_view::npos)
    return "";
  start += before.size();
  auto end = message.find('\'', start);
  return end == std::string_view::npos ? "" : std::string(message.substr(start, end - start));
}

}  // namespace

std::string access_denied_hint(std::string_view server_message, const MariadbUrl& url) {
  std::string user = quoted_after(server_message, "for user '");
  std::string host = quoted_after(server_message, "'@'");
  if (user.empty())
    user = url.user.value_or("(your login)");
  const std::string file = url.defaults_file.value_or("~/.my.cnf");
  const std::string group = "[" + url.option_group + "]";
  if (server_message.find("using password: NO") != std::string_view::npos) {
    return "; no password was sent for login " + user + ": put it in " + file + " under " + group +
           " as password=… (mode 0600, of the user who runs clock); a second login on " +
           "this host, such as gc's, gets a group of its own ([clock-gc] and ?group=clock-gc "
           "in its URL)";
  }
  if (host != "localhost")
    return "; check the password in " + file + " " + group +
           " (or the URL) and the host part "
           "of the login";
  // MariaDB matches the most specific host first, and an anonymous account
  // (''@'localhost', which a fresh install may have) is more specific than
  // 'user'@'%': the server then denies a login that exists, whatever its
  // password.
  return "; check the password in " + file + " " + group + "; if the login exists only as '" +
         user +
         "'@'%', an anonymous account ''@'localhost' is chosen before it for "
         "connections from this host: drop it (DROP USER ''@'localhost', as "
         "mariadb-secure-installation does) or create '" +
         user + "'@'localhost' too";
}

}  // namespace clk::store::mariadb
