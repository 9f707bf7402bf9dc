// Checking and masking http(s) URLs (http_url.hpp).
#include "util/http_url.hpp"

#include <cctype>

namespace clk::util {

namespace {

bool is_scheme(std::string_view url, std::string_view scheme) {
  if (url.size() < scheme.size())
    return false;
  for (std::size_t i = 0; i < scheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(url[i])) != scheme[i])
      return false;
  }
  return true;
}

}  // namespace

std::size_t http_host_begin(std::string_view url) {
  return is_scheme(url, "https://") ? 8 : is_scheme(url, "http://") ? 7 : 0;
}

std::size_t http_host_end(std::string_view url) {
  const std::size_t begin = http_host_begin(url);
  auto end = url.find_first_of("/?#", begin);
  return end == std::string_view::npos ? url.size() : end;
}

std::string http_url_problem(std::string_view url) {
  const std::size_t begin = http_host_begin(url);
  if (begin == 0)
    return "expected an http:// or https:// URL, e.g. https://hc-ping.com/<uuid>";
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f)
      return "a URL cannot hold spaces or control characters";
  }
  if (http_host_end(url) == begin)
    return "the URL names no host";
  if (url.find('#') != std::string_view::npos)
    return "a ping URL has no #fragment";
  return "";
}

std::string masked_http_url(std::string_view url) {
  const std::size_t begin = http_host_begin(url);
  if (begin == 0)
    return "…";
  const std::size_t end = http_host_end(url);
  std::string_view host = url.substr(begin, end - begin);
  if (auto at = host.rfind('@'); at != std::string_view::npos)
    host = host.substr(at + 1);
  return std::string(url.substr(0, begin)) + std::string(host) + (end < url.size() ? "/…" : "");
}

}  // namespace clk::util
