// Database URLs and libpq keyword strings, checked against libpq's own parser
// (PQconninfoParse, which connects to nothing):
// - masking (util::mask_passwords, behind store::mask_password, the stored
//   command lines and the argv scrub) hides whatever libpq takes as the
//   password: libpq finds no such password in the masked text, and the
//   password as written is not in it either;
// - the time-out defaults clock appends (postgres::with_defaults) never change
//   a setting the user gave, nor break a string libpq accepts;
// - describe_target (the host list shown in messages) never shows the password;
// - backend_of / sqlite_path_of / parse_mariadb_url fail only with a
//   configuration error (exit 78).
#include <libpq-fe.h>
#include <map>
#include <optional>
#include <string>

#include "error.hpp"
#include "fuzz_check.hpp"
#include "store/mariadb_url.hpp"
#include "store/open_store.hpp"
#include "store/postgres/conninfo.hpp"
#include "util/password.hpp"

namespace {

using Options = std::map<std::string, std::string>;

// libpq's reading of a connection string, or nullopt if it rejects it.
std::optional<Options> libpq_parse(const std::string& text) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(text.c_str(), &error);
  PQfreemem(error);
  if (!options)
    return std::nullopt;
  Options out;
  for (auto* option = options; option->keyword; ++option) {
    if (option->val)
      out[option->keyword] = option->val;
  }
  PQconninfoFree(options);
  return out;
}

std::size_t count_of(std::string_view text, std::string_view needle) {
  std::size_t count = 0;
  for (auto at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + 1))
    ++count;
  return count;
}

const char* no_environment(const char*) {
  return nullptr;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(clk::fuzz::as_text(data, size));
  if (text.find('\0') != std::string::npos)
    return 0;  // a C string for libpq; argv, env and TOML strings carry no NUL either

  try {
    auto backend = clk::store::backend_of(text);
    if (backend == clk::store::Backend::sqlite)
      FUZZ_CHECK(!clk::store::sqlite_path_of(text).empty());
    if (backend == clk::store::Backend::mariadb)
      FUZZ_CHECK(!clk::store::parse_mariadb_url(text).database.empty());
  } catch (const clk::Error& error) {
    FUZZ_CHECK(error.code() == clk::ExitCode::config);
  }

  std::string masked = clk::store::mask_password(text);
  auto original = libpq_parse(text);
  if (!original)
    return 0;
  auto password = original->find("password");
  // (A password of white space only, which a URL query can carry, is left.)
  if (password != original->end() &&
      password->second.find_first_not_of(" \t\n\v\f\r") != std::string::npos) {
    const std::string& secret = password->second;
    // (Unless another setting holds the same text: then it may show.)
    bool elsewhere = false;
    for (const auto& [key, value] : *original)
      elsewhere = elsewhere || (key != "password" && value.find(secret) != std::string::npos);
    // libpq does not find the password in the masked text (not even one it
    // would percent-decode or unescape to it) …
    auto after = libpq_parse(masked);
    if (after) {
      auto shown = after->find("password");
      FUZZ_CHECK(shown == after->end() || shown->second != secret || secret == "****");
    }
    // … nor is it there as it was written, when it was written once (the
    // spans cut out instead of masked: "****" could spell part of it).
    std::string cut;
    std::size_t done = 0;
    for (auto span : clk::util::password_spans(text, clk::util::Words::until_keyword)) {
      cut += text.substr(done, span.begin - done) + '\x01';
      done = span.end;
    }
    cut += text.substr(done);
    // Nor may the key spell it ("sword=" of password=swor\d=).
    for (auto at = cut.find("password"); at != std::string::npos; at = cut.find("password"))
      cut.replace(at, 8, "\x02");
    // Without escapes ('%', '\\') the password is written as libpq reads it,
    // so its one occurrence is the password itself.
    bool escaped = text.find_first_of("%\\") != std::string::npos;
    if (!elsewhere && !escaped && count_of(text, secret) == 1 &&
        secret.find_first_of("\x01\x02") == std::string::npos)
      FUZZ_CHECK(cut.find(secret) == std::string::npos);
    // describe_target shows hosts and ports: the password is not among them.
    // (It joins hosts and ports with ':' and ',', which could spell one.)
    // (… and says "the local socket, port 5432", which could too.)
    bool joinable =
        secret.find_first_of(":,") != std::string::npos ||
        std::string_view("the local socket, port 5432").find(secret) != std::string_view::npos;
    if (!elsewhere && !joinable && count_of(text, secret) == 1 && secret.size() >= 4) {
      FUZZ_CHECK(clk::store::postgres::describe_target(text, no_environment).find(secret) ==
                 std::string::npos);
    }
  }

  using namespace std::chrono_literals;
  std::string completed = clk::store::postgres::with_defaults(text, 5s, no_environment);
  auto extended = libpq_parse(completed);
  FUZZ_CHECK(extended.has_value());
  for (const auto& [key, value] : *original) {
    auto kept = extended->find(key);
    FUZZ_CHECK(kept != extended->end() && kept->second == value);
  }
  return 0;
}
