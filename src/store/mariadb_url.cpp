// See mariadb_url.hpp. A hand-written scanner like util/password.cpp: the URL
// grammar is small, and every message shows the URL with its password masked.
#include "store/mariadb_url.hpp"

#include <algorithm>
#include <charconv>

#include "error.hpp"
#include "util/password.hpp"

namespace clk::store {

namespace {

[[noreturn]] void refuse(const std::string& url, const std::string& why) {
  throw Error(
      ExitCode::config,
      "invalid MariaDB URL '" + util::mask_passwords(url, util::Words::until_keyword) +
          "': " + why +
          " (the form is mysql://user[:password]@host[:port][,host[:port]…]/database[?socket=…])");
}

int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

std::string decode(const std::string& url, std::string_view text, std::string_view what) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    int high = i + 2 < text.size() ? hex_value(text[i + 1]) : -1;
    int low = high >= 0 ? hex_value(text[i + 2]) : -1;
    if (low < 0)
      refuse(url, "a '%' in the " + std::string(what) + " is not followed by two hex digits");
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  if (out.find('\0') != std::string::npos)
    refuse(url, "the " + std::string(what) + " holds a NUL byte");
  return out;
}

bool parse_bool(const std::string& url, const std::string& key, const std::string& value) {
  if (value == "true" || value == "1" || value == "yes" || value == "on")
    return true;
  if (value == "false" || value == "0" || value == "no" || value == "off")
    return false;
  refuse(url, key + "=" + value + " is not true or false");
}

void set_once(const std::string& url, const std::string& key, std::optional<std::string>& field,
              std::string value) {
  if (field)
    refuse(url, key + " is given twice");
  field = std::move(value);
}

void apply_option(const std::string& url, MariadbUrl& out, std::string key, std::string value) {
  std::replace(key.begin(), key.end(), '_', '-');
  MariadbTls& tls = out.tls;
  if (key == "socket") {
    set_once(url, key, out.socket, std::move(value));
  } else if (key == "group") {
    if (value.empty() || value.find_first_of("[]\n") != std::string::npos)
      refuse(url, "group= names no option-file group");
    out.option_group = std::move(value);
  } else if (key == "defaults-file") {
    set_once(url, key, out.defaults_file, std::move(value));
  } else if (key == "password") {
    set_once(url, key, out.password, std::move(value));
  } else if (key == "ssl") {
    tls.enforce = parse_bool(url, key, value);
  } else if (key == "ssl-verify-server-cert") {
    tls.verify_server_cert = parse_bool(url, key, value);
  } else if (key == "ssl-ca") {
    set_once(url, key, tls.ca, std::move(value));
  } else if (key == "ssl-capath") {
    set_once(url, key, tls.capath, std::move(value));
  } else if (key == "ssl-cert") {
    set_once(url, key, tls.cert, std::move(value));
  } else if (key == "ssl-key") {
    set_once(url, key, tls.key, std::move(value));
  } else if (key == "ssl-cipher") {
    set_once(url, key, tls.cipher, std::move(value));
  } else if (key == "ssl-crl") {
    set_once(url, key, tls.crl, std::move(value));
  } else if (key == "ssl-crlpath") {
    set_once(url, key, tls.crlpath, std::move(value));
  } else if (key == "tls-version") {
    set_once(url, key, tls.version, std::move(value));
  } else {
    refuse(url,
           "unknown option '" + key +
               "' (known: socket, group, defaults-file, ssl, ssl-verify-server-cert, ssl-ca, "
               "ssl-capath, ssl-cert, ssl-key, ssl-cipher, ssl-crl, ssl-crlpath, tls-version)");
  }
}

void parse_query(const std::string& url, std::string_view query, MariadbUrl& out) {
  while (!query.empty()) {
    std::size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (pair.empty())
      continue;
    std::size_t eq = pair.find('=');
    if (eq == std::string_view::npos || eq == 0)
      refuse(url, "the option '" + std::string(pair.substr(0, eq)) + "' has no value");
    // The key is not decoded: "pass%77ord=" must not become a password
    // that the masking does not see.
    apply_option(url, out, std::string(pair.substr(0, eq)),
                 decode(url, pair.substr(eq + 1), "option value"));
  }
}

MariadbHost parse_host_port(const std::string& url, std::string_view hostport) {
  MariadbHost out;
  std::optional<std::string_view> port;
  if (!hostport.empty() && hostport.front() == '[') {
    std::size_t close = hostport.find(']');
    if (close == std::string_view::npos)
      refuse(url, "an IPv6 host in '[' has no ']'");
    out.name = std::string(hostport.substr(1, close - 1));
    std::string_view rest = hostport.substr(close + 1);
    if (!rest.empty() && rest.front() != ':')
      refuse(url, "after ']' comes ':port', ',' or '/database'");
    if (!rest.empty())
      port = rest.substr(1);
  } else {
    std::size_t colon = hostport.find(':');
    std::string_view host = hostport.substr(0, colon);
    if (!host.empty())
      out.name = decode(url, host, "host");
    if (colon != std::string_view::npos)
      port = hostport.substr(colon + 1);
  }
  if (!port)
    return out;
  unsigned value = 0;
  auto [end, error] = std::from_chars(port->data(), port->data() + port->size(), value);
  if (port->empty() || error != std::errc{} || end != port->data() + port->size() || value == 0 ||
      value > 65535) {
    refuse(url, "the port '" + std::string(*port) + "' is not a number from 1 to 65535");
  }
  out.port = value;
  return out;
}

// "h1:p1,h2,[::1]:p3": the commas outside brackets separate the hosts.
std::vector<MariadbHost> parse_hosts(const std::string& url, std::string_view authority) {
  std::vector<MariadbHost> hosts;
  std::size_t start = 0;
  bool in_brackets = false;
  for (std::size_t i = 0; i <= authority.size(); ++i) {
    char c = i < authority.size() ? authority[i] : ',';
    if (c == '[')
      in_brackets = true;
    else if (c == ']')
      in_brackets = false;
    if (i < authority.size() && (c != ',' || in_brackets))
      continue;
    std::string_view one = authority.substr(start, i - start);
    if (one.empty() && authority.find(',') != std::string_view::npos)
      refuse(url, "the list of hosts has an empty entry");
    hosts.push_back(parse_host_port(url, one));
    start = i + 1;
  }
  return hosts;
}

}  // namespace

std::string MariadbHost::label() const {
  std::string text = name.value_or("localhost");
  if (text.find(':') != std::string::npos)
    text = "[" + text + "]";
  return port == 0 ? text : text + ":" + std::to_string(port);
}

bool is_mariadb_url(std::string_view url) {
  return url.starts_with("mysql://") || url.starts_with("mariadb://");
}

bool is_plain_database_name(std::string_view name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$' || c == '-';
  });
}

MariadbUrl parse_mariadb_url(const std::string& url) {
  if (!is_mariadb_url(url))
    refuse(url, "it does not start with mysql:// or mariadb://");
  MariadbUrl out;
  std::string_view rest = std::string_view(url).substr(url.find("://") + 3);
  std::size_t question = rest.find('?');
  std::string_view query =
      question == std::string_view::npos ? std::string_view{} : rest.substr(question + 1);
  rest = rest.substr(0, question);
  // The user info ends at the last '@' before the path, as util/password.cpp
  // masks it: an unencoded '@' in a password stays in the password.
  std::size_t slash =
      rest.find('/', rest.rfind('@') == std::string_view::npos ? 0 : rest.rfind('@'));
  std::string_view authority = rest.substr(0, slash);
  std::string_view path =
      slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
  std::size_t at = authority.rfind('@');
  if (at != std::string_view::npos) {
    std::string_view userinfo = authority.substr(0, at);
    std::size_t colon = userinfo.find(':');
    std::string user = decode(url, userinfo.substr(0, colon), "user");
    if (!user.empty())
      out.user = std::move(user);
    if (colon != std::string_view::npos)
      out.password = decode(url, userinfo.substr(colon + 1), "password");
    authority = authority.substr(at + 1);
  }
  out.hosts = parse_hosts(url, authority);
  out.database = decode(url, path, "database");
  if (out.database.empty())
    refuse(url, "it names no database: add /DATABASE after the host");
  if (!is_plain_database_name(out.database)) {
    refuse(url, "the database name '" + out.database +
                    "' is not 1 to 64 of the characters A-Z a-z 0-9 _ $ -");
  }
  parse_query(url, query, out);
  if (out.socket && out.hosts.size() > 1)
    refuse(url, "socket= names one local server, not a list of hosts");
  const auto& first = out.hosts.front().name;
  if (out.socket && first && *first != "localhost")
    refuse(url, "socket= needs the host empty or localhost (a socket is local)");
  return out;
}

}  // namespace clk::store
