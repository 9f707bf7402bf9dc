// Connection-string defaults and target descriptions, parsed the way libpq
// reads URLs ("postgresql://user:pw@h1:5432,h2/db?k=v") and keyword strings
// ("host=h1 port='5432'"), as far as these two purposes need.
#include "store/postgres/conninfo.hpp"

#include <cstdlib>
#include <optional>
#include <utility>
#include <vector>

namespace clk::store::postgres {

namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

// Timeouts for a dead connection: keepalive probes after 10 s of silence,
// every 5 s, 3 unanswered ones close it; unacknowledged data closes it after 30 s.
constexpr std::string_view k_keepalives =
    "keepalives_idle=10 keepalives_interval=5 keepalives_count=3";
constexpr std::string_view k_tcp_user_timeout = "tcp_user_timeout=30000";

bool is_url(const std::string& url) {
  return url.starts_with("postgresql://") || url.starts_with("postgres://");
}

const char* env(const Getenv& getenv, const char* name) {
  const char* value = getenv ? getenv(name) : std::getenv(name);
  return value && *value ? value : nullptr;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

std::string percent_decoded(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    int high = i + 2 < text.size() && text[i] == '%' ? hex_digit(text[i + 1]) : -1;
    int low = high >= 0 ? hex_digit(text[i + 2]) : -1;
    if (low >= 0) {
      out += static_cast<char>(high * 16 + low);
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
         c == '\v';  // isspace, as libpq
}

// key=value pairs of a keyword string; values may be 'quoted' with \ escapes.
// `open_end`, if given, is set when the string ends in an unquoted empty
// value ("… password="), which anything appended would become.
Pairs keyword_pairs(const std::string& text, bool* open_end = nullptr) {
  Pairs pairs;
  if (open_end)
    *open_end = false;
  std::size_t i = 0;
  auto skip_spaces = [&] {
    while (i < text.size() && is_space(text[i]))
      ++i;
  };
  for (;;) {
    skip_spaces();
    if (i >= text.size())
      return pairs;
    std::string key;
    while (i < text.size() && text[i] != '=' && !is_space(text[i]))
      key += text[i++];
    skip_spaces();
    if (i >= text.size() || text[i] != '=')
      return pairs;  // malformed: libpq will say so
    ++i;
    skip_spaces();
    std::string value;
    bool quoted = i < text.size() && text[i] == '\'';
    if (quoted)
      ++i;
    while (i < text.size() && (quoted ? text[i] != '\'' : !is_space(text[i]))) {
      if (text[i] == '\\' && i + 1 < text.size())
        ++i;
      value += text[i++];
    }
    if (quoted)
      ++i;
    if (open_end)
      *open_end = !quoted && value.empty() && i >= text.size();
    pairs.emplace_back(std::move(key), std::move(value));
  }
}

// Where a URL's host list begins: after the user info, which ends at the
// first '@' before any '/' (as libpq reads it) and may hold a '?' of its own.
std::size_t authority_start(const std::string& url) {
  std::size_t start = url.find("://") + 3;
  std::size_t stop = url.find_first_of("@/", start);
  return stop != std::string::npos && url[stop] == '@' ? stop + 1 : start;
}

// Where a URL's host list ends ('/', '?' or the end), walked as libpq walks
// it: a bracketed IPv6 host ("[a?b]") may hold any of these itself.
std::size_t authority_end(const std::string& url) {
  std::size_t at = authority_start(url);
  for (;;) {
    if (at < url.size() && url[at] == '[') {
      at = url.find(']', at);
      if (at == std::string::npos)
        return url.size();  // unterminated: libpq rejects the URL
      ++at;
    }
    at = url.find_first_of(",/?", at);
    if (at == std::string::npos || url[at] != ',')
      return at == std::string::npos ? url.size() : at;
    ++at;
  }
}

// Where a URL's query begins (its '?'), or npos: after the host list and
// the database name, which may hold no '?'.
std::size_t query_start(const std::string& url) {
  return url.find('?', authority_end(url));
}

// The query parameters of a URL, percent-decoded.
Pairs url_params(const std::string& url) {
  Pairs pairs;
  auto question = query_start(url);
  if (question == std::string::npos)
    return pairs;
  std::string_view query = std::string_view(url).substr(question + 1);
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view item = query.substr(0, amp);
    auto eq = item.find('=');
    if (eq != std::string_view::npos) {
      pairs.emplace_back(percent_decoded(item.substr(0, eq)), percent_decoded(item.substr(eq + 1)));
    }
    if (amp == std::string_view::npos)
      break;
    query.remove_prefix(amp + 1);
  }
  return pairs;
}

Pairs settings_of(const std::string& url) {
  return is_url(url) ? url_params(url) : keyword_pairs(url);
}

std::optional<std::string> find(const Pairs& pairs, std::string_view key) {
  std::optional<std::string> found;
  for (const auto& [k, v] : pairs) {
    if (k == key)
      found = v;  // the last one wins, as in libpq
  }
  return found;
}

bool mentions_prefix(const Pairs& pairs, std::string_view prefix) {
  for (const auto& pair : pairs) {
    if (pair.first.starts_with(prefix))
      return true;
  }
  return false;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    auto at = text.find(separator, start);
    parts.push_back(text.substr(start, at - start));
    if (at == std::string::npos)
      return parts;
    start = at + 1;
  }
}

// The host list and port list written in a URL's authority ("u:pw@h1:1,[::1]:2").
void url_authority(const std::string& url, std::string& hosts, std::string& ports) {
  std::size_t start = authority_start(url);
  std::string authority = url.substr(start, authority_end(url) - start);
  // User and password are never shown, nor what follows a second '@' (a
  // password written with an '@' not percent-encoded: libpq reads the rest
  // as a host, the user meant it as a password).
  auto at = authority.rfind('@');
  if (at != std::string::npos)
    authority.erase(0, at + 1);
  std::vector<std::string> host_list;
  std::vector<std::string> port_list;
  for (const auto& item : split(authority, ',')) {
    std::size_t colon = item.starts_with('[') ? item.find(':', item.find(']')) : item.find(':');
    host_list.push_back(percent_decoded(item.substr(0, colon)));
    port_list.push_back(colon == std::string::npos ? "" : item.substr(colon + 1));
  }
  // Empty entries keep their place: "," is two hosts without ports.
  auto join = [](const std::vector<std::string>& parts) {
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i)
      out += (i == 0 ? "" : ",") + parts[i];
    return out;
  };
  hosts = join(host_list);
  // As libpq's URL parser: one host without a port leaves the port unset
  // (PGPORT applies), but several hosts set it to a list ("," for two hosts
  // without ports), so PGPORT is ignored and each empty entry is 5432.
  ports = join(port_list);
}

}  // namespace

std::string with_defaults(const std::string& url, std::chrono::milliseconds connect_timeout,
                          const Getenv& getenv) {
  Pairs settings = settings_of(url);
  if (find(settings, "service") || env(getenv, "PGSERVICE"))
    return url;
  std::vector<std::string> additions;
  if (!find(settings, "connect_timeout") && !env(getenv, "PGCONNECT_TIMEOUT") &&
      connect_timeout.count() > 0) {
    auto seconds = (connect_timeout.count() + 999) / 1000;
    additions.push_back("connect_timeout=" + std::to_string(seconds));
  }
  if (!mentions_prefix(settings, "keepalives"))
    additions.emplace_back(k_keepalives);
  if (!find(settings, "tcp_user_timeout"))
    additions.emplace_back(k_tcp_user_timeout);
  std::string result = url;
  if (!is_url(result) && !additions.empty()) {
    // A trailing backslash would escape the space we add, and a value left
    // empty at the end ("password=") would take our first setting as its
    // value (libpq skips spaces after '='): leave the former alone, close
    // the latter with ''.
    if (result.ends_with('\\'))
      return result;
    bool open_end = false;
    keyword_pairs(result, &open_end);
    if (open_end)
      result += "''";
  }
  for (const auto& addition : additions) {
    for (const auto& setting : split(addition, ' ')) {
      if (is_url(result)) {
        auto question = query_start(result);
        bool open = question == std::string::npos;
        bool at_start = !open && question + 1 == result.size();
        result += open ? "?" : (at_start || result.back() == '&') ? "" : "&";
      } else if (!result.empty()) {  // even after a space: it may be escaped ("a\\ ")
        result += ' ';
      }
      result += setting;
    }
  }
  return result;
}

std::string describe_target(const std::string& url, const Getenv& getenv) {
  Pairs settings = settings_of(url);
  std::string hosts;
  std::string ports;
  if (is_url(url))
    url_authority(url, hosts, ports);
  if (auto host = find(settings, "host"))
    hosts = *host;
  if (hosts.empty()) {
    if (auto hostaddr = find(settings, "hostaddr"))
      hosts = *hostaddr;
  }
  if (auto port = find(settings, "port"))
    ports = *port;
  if (hosts.empty()) {
    const char* from_env = env(getenv, "PGHOST");
    if (!from_env)
      from_env = env(getenv, "PGHOSTADDR");
    hosts = from_env ? from_env : "";
  }
  if (ports.empty()) {
    const char* from_env = env(getenv, "PGPORT");
    ports = from_env ? from_env : "5432";
  }
  auto host_list = split(hosts, ',');
  auto port_list = split(ports, ',');
  std::string out;
  for (std::size_t i = 0; i < host_list.size(); ++i) {
    std::string port = port_list.size() == host_list.size() ? port_list[i] : port_list.front();
    if (port.empty())
      port = "5432";
    out += out.empty() ? "" : ",";
    out += host_list[i].empty() ? "the local socket, port " + port : host_list[i] + ":" + port;
  }
  return out;
}

std::string one_line(const std::string& message) {
  std::string out;
  bool space = false;
  for (char c : message) {
    if (is_space(c)) {
      space = !out.empty();
    } else {
      if (space)
        out += ' ';
      out += c;
      space = false;
    }
  }
  return out;
}

}  // namespace clk::store::postgres
