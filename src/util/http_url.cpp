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

std::vector<Span> http_url_secret_spans(std::string_view url) {
  std::vector<Span> spans;
  const std::size_t begin = http_host_begin(url);
  if (begin == 0)
    return spans;
  std::size_t host = begin;
  if (auto at = url.rfind('@'); at != std::string_view::npos && at >= begin) {
    if (at > begin)
      spans.push_back({begin, at});
    host = at + 1;
  }
  auto end = url.find_first_of("/?#", host);
  if (end != std::string_view::npos && end < url.size())
    spans.push_back({end, url.size()});
  return spans;
}

std::vector<Span> ping_url_spans(std::string_view text) {
  constexpr std::string_view k_flag = "--ping";
  std::vector<Span> spans;
  std::size_t from = 0;
  while ((from = text.find(k_flag, from)) != std::string_view::npos) {
    std::size_t at = from + k_flag.size();
    from = at;
    if (at < text.size() && text[at] == '=') {
      ++at;
    } else {
      const std::size_t spaces = at;
      while (at < text.size() && (text[at] == ' ' || text[at] == '\t'))
        ++at;
      if (at == spaces)
        continue;  // --pinger, --ping-…: another word
    }
    if (at < text.size() && (text[at] == '\'' || text[at] == '"'))
      ++at;
    std::size_t end = text.find_first_of(" \t\n'\"", at);
    if (end == std::string_view::npos)
      end = text.size();
    for (const auto& span : http_url_secret_spans(text.substr(at, end - at)))
      spans.push_back({at + span.begin, at + span.end});
    from = end;
  }
  return spans;
}

std::string mask_ping_urls(std::string_view text) {
  return mask_spans(text, ping_url_spans(text));
}

}  // namespace clk::util
