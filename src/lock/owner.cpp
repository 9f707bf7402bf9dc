// Owner id validation.
#include "lock/owner.hpp"

#include "error.hpp"

namespace clk::lock {

OwnerId OwnerId::parse(std::string_view text) {
  static constexpr std::size_t k_dashes[] = {8, 13, 18, 23};
  bool valid = text.size() == 36;
  std::string normal;
  for (std::size_t i = 0; valid && i < text.size(); ++i) {
    char c = text[i];
    bool dash_here = i == k_dashes[0] || i == k_dashes[1] || i == k_dashes[2] || i == k_dashes[3];
    if (dash_here) {
      valid = c == '-';
    } else if (c >= 'A' && c <= 'F') {
      c = static_cast<char>(c - 'A' + 'a');
    } else {
      valid = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    }
    normal += c;
  }
  if (!valid) {
    throw Error(ExitCode::usage,
                "invalid owner id: expected a UUID like 3f2b8c1e-9a4d-4e1f-8b7a-2c5d6e7f8a9b "
                "(as printed by 'clock acquire'), check --owner or CLOCK_OWNER");
  }
  return OwnerId(std::move(normal));
}

OwnerCredential OwnerCredential::parse(std::string_view text) {
  auto dot = text.find('.');
  OwnerCredential credential{OwnerId::parse(text.substr(0, dot)), ""};
  if (dot == std::string_view::npos)
    return credential;
  std::string_view secret = text.substr(dot + 1);
  bool valid = secret.size() >= 32 && secret.size() <= 128;
  for (char c : secret) {
    if (c >= 'A' && c <= 'F')
      c = static_cast<char>(c - 'A' + 'a');
    valid = valid && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
    credential.secret += c;
  }
  if (!valid) {
    throw Error(ExitCode::usage,
                "invalid owner secret after the id " + credential.id.str() +
                    ": expected ID.SECRET with 32 to 128 hex digits, as 'clock acquire --format "
                    "shell' exports it in CLOCK_OWNER; check --owner or CLOCK_OWNER");
  }
  return credential;
}

}  // namespace clk::lock
