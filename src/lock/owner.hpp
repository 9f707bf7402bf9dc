// Who holds or waits for a lock: a 128-bit id in UUID text form, plus the facts
// an operator needs to find the process (man clock, DESCRIPTION).
#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

namespace clk::lock {

class OwnerId {
 public:
  // Validates 8-4-4-4-12 hex digits and normalises to lower case; throws
  // clk::Error(usage) otherwise.
  static OwnerId parse(std::string_view text);
  // Wraps an id already known to be valid (read back from the database).
  static OwnerId trusted(std::string text) { return OwnerId(std::move(text)); }
  OwnerId() = default;  // empty: not yet known

  const std::string& str() const { return m_text; }
  auto operator<=>(const OwnerId&) const = default;

 private:
  explicit OwnerId(std::string text) : m_text(std::move(text)) {}
  std::string m_text;
};

// What --owner and CLOCK_OWNER carry: the owner id and, where the caller can
// prove it is that owner, its secret, as ID.SECRET (an id alone names an owner
// without proof, enough for status). The secret is 32 to 128 hex digits (128
// bits or more); it is never printed, logged or stored readably (man clock, DESCRIPTION).
struct OwnerCredential {
  OwnerId id;
  std::string secret;  // lower-case hex; empty: the id alone

  // Parses ID or ID.SECRET; throws clk::Error(usage) otherwise, without
  // repeating the text (it may hold a secret).
  static OwnerCredential parse(std::string_view text);
  // ID.SECRET, or ID when there is no secret: for CLOCK_OWNER and eval.
  std::string str() const { return secret.empty() ? id.str() : id.str() + "." + secret; }
};

struct OwnerInfo {
  std::string host;
  std::string ip;
  std::int64_t pid = 0;
  std::string user;
  std::string command;  // the wrapped command line, shown verbatim (escaped on output)
  std::chrono::system_clock::time_point started{};
  // The database login that wrote the row (PostgreSQL's session_user, the
  // operating system user on SQLite): filled in by the store when it reads,
  // never taken from the caller, so not a claim as the facts above are.
  // Empty for rows written before it was kept.
  std::string db_user;
};

}  // namespace clk::lock
