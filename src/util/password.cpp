// A hand-written scanner rather than a regex: it runs on every message and
// stored command line, and the fuzzer (tests/fuzz/fuzz_database_url.cpp)
// checks that what it masks is exactly what libpq would take as a password.
#include "util/password.hpp"

#include <algorithm>
#include <cctype>

namespace clk::util {

namespace {

bool is_space(char c) {
  return std::isspace(static_cast<unsigned char>(c)) != 0;
}

// scheme://user:SECRET@host…
// In a connection string the URL is all of it (libpq takes a space in the
// user info as part of it); in a command line it ends with its word.
void userinfo_spans(std::string_view text, Words words, std::vector<Span>& spans) {
  for (std::size_t at = text.find("://"); at != std::string_view::npos;
       at = text.find("://", at + 3)) {
    std::size_t start = at + 3;
    std::size_t stop = start;
    while (stop < text.size() && (words == Words::until_keyword || !is_space(text[stop])))
      ++stop;
    std::string_view authority = text.substr(start, stop - start);
    std::size_t last_at = authority.rfind('@');
    if (last_at == std::string_view::npos)
      continue;
    std::size_t colon = authority.substr(0, last_at).find(':');
    if (colon == std::string_view::npos || colon + 1 == last_at)
      continue;
    spans.push_back({start + colon + 1, start + last_at});
  }
}

// password = SECRET, password='SEC RET', password=SEC\\ RET, ?password=SECRET
constexpr auto npos = std::string_view::npos;

void keyword_spans(std::string_view text, Words words, std::vector<Span>& spans) {
  static constexpr std::string_view k_key = "password";
  for (std::size_t i = 0; i + k_key.size() <= text.size(); ++i) {
    bool match = std::equal(k_key.begin(), k_key.end(), text.begin() + i, [](char a, char b) {
      return a == std::tolower(static_cast<unsigned char>(b));
    });
    if (!match)
      continue;
    std::size_t p = i + k_key.size();
    while (p < text.size() && is_space(text[p]))
      ++p;
    if (p >= text.size() || text[p] != '=')
      continue;
    ++p;
    while (p < text.size() && is_space(text[p]))
      ++p;
    std::size_t begin = p;
    if (p < text.size() && text[p] == '\'') {
      ++p;
      while (p < text.size() && text[p] != '\'')
        p += text[p] == '\\' ? 2 : 1;
      p = std::min(p + 1, text.size());
      // Whatever sticks to the closing quote goes too ('a'b…).
      while (p < text.size() && !is_space(text[p]))
        ++p;
    } else {
      // libpq lets a backslash escape a space in an unquoted value. A '&'
      // (the next parameter of a URL query) does not end it: masking the
      // rest of the query too is the safe side.
      while (p < text.size() && !is_space(text[p]))
        p += text[p] == '\\' ? 2 : 1;
      p = std::min(p, text.size());
    }
    // "password=my secret": libpq rejects the words after the first, but
    // they are the rest of the password; a connection string's next word
    // always holds a '='.
    while (words == Words::until_keyword) {
      std::size_t next = p;
      while (next < text.size() && is_space(text[next]))
        ++next;
      std::size_t word_end = next;
      while (word_end < text.size() && !is_space(text[word_end]))
        ++word_end;
      if (next == word_end || text.substr(next, word_end - next).find('=') != npos)
        break;
      p = word_end;
    }
    if (p > begin)
      spans.push_back({begin, p});
    // Scanning goes on from the next byte, not past the span: a word taken
    // as the rest of one password may be the key of the next.
    i = begin > i ? begin - 1 : i;
  }
}

}  // namespace

std::vector<Span> password_spans(std::string_view text, Words words) {
  std::vector<Span> spans;
  userinfo_spans(text, words, spans);
  keyword_spans(text, words, spans);
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.begin < b.begin; });
  std::vector<Span> merged;
  for (const Span& span : spans) {
    if (!merged.empty() && span.begin <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, span.end);
    } else {
      merged.push_back(span);
    }
  }
  return merged;
}

bool has_password(std::string_view text) {
  return !password_spans(text).empty();
}

std::string mask_passwords(std::string_view text, Words words) {
  return mask_spans(text, password_spans(text, words));
}

std::string mask_spans(std::string_view text, const std::vector<Span>& spans) {
  std::string out;
  std::size_t done = 0;
  for (const Span& span : spans) {
    out.append(text.substr(done, span.begin - done));
    out += "****";
    done = span.end;
  }
  out.append(text.substr(done));
  return out;
}

}  // namespace clk::util
