// http:// and https:// URLs as clock takes them from flags and files (ping
// URLs): what is wrong with one, and how messages show one without its
// secret parts.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/password.hpp"

namespace clk::util {

// Why `url` is not an http:// or https:// URL with a host and no whitespace,
// control character or #fragment; "" when it is one.
std::string http_url_problem(std::string_view url);

// The URL as messages show it: scheme and host; a user:password@ and the
// path and query (a check's uuid or ping key) become "…".
std::string masked_http_url(std::string_view url);

// The length of the URL's scheme and "://" (0 when it is not http or https),
// and where its host ends (the first '/', '?' or '#' after it).
std::size_t http_host_begin(std::string_view url);
std::size_t http_host_end(std::string_view url);

// The secret parts of an http(s) URL, in order: its user:password@ (up to
// the last '@', as password_spans reads one) and everything after its host
// (the path and query: a check's uuid or ping key). None when `url` is not
// http(s).
std::vector<Span> http_url_secret_spans(std::string_view url);

// The secret parts of every ping URL in a command line: the word after
// `--ping` (one or more spaces apart, or '='), quoted or not, wherever it
// is (also inside an `sh -c '…'` word).
std::vector<Span> ping_url_spans(std::string_view text);

// `text` with each span of ping_url_spans replaced by "****": how a stored
// command line shows a nested clock run's --ping.
std::string mask_ping_urls(std::string_view text);

}  // namespace clk::util
