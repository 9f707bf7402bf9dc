// Where passwords sit in database URLs, libpq keyword strings and command
// lines, so that none is ever shown: masked in messages and in stored command
// lines, blanked in our own argv (man clock, EXIT STATUS: no error ever prints a password).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace clk::util {

struct Span {
  std::size_t begin = 0;
  std::size_t end = 0;  // one past the last byte
};

// What the text is. In a command line, a URL and an unquoted password=VALUE
// end with their word. In a connection string, the URL is the whole text
// (libpq reads a space in the user info as part of it), and password=VALUE
// also takes the words after it up to the next that holds a '=' (they can
// only be the rest of a password typed with spaces, which libpq refuses).
enum class Words { one, until_keyword };

// The non-empty passwords in `text`, in order, not overlapping: the secret of
// scheme://user:SECRET@host (up to the URL's last '@', so an unencoded '@'
// or '/' in it is covered too) and the value of
// password=SECRET (any case, spaces around '=', a '…' value, else up to
// white space; backslash escapes as libpq reads them), wherever they occur. Errs on the
// side of covering too much.
std::vector<Span> password_spans(std::string_view text, Words words = Words::one);

// True if `text` holds a password.
bool has_password(std::string_view text);

// `text` with each password replaced by "****".
std::string mask_passwords(std::string_view text, Words words = Words::one);

// `text` with each of `spans` (in order, not overlapping) replaced by "****":
// how passwords and owner secrets are masked alike.
std::string mask_spans(std::string_view text, const std::vector<Span>& spans);

}  // namespace clk::util
