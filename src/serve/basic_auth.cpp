#include "serve/basic_auth.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sodium.h>
#include <sys/stat.h>

#include "error.hpp"

namespace clk::serve {

BasicAuth BasicAuth::from_file(const std::filesystem::path& file) {
  struct stat facts {};
  if (::stat(file.c_str(), &facts) != 0)
    throw Error(ExitCode::config,
                "cannot read --auth-file " + file.string() + ": " + std::strerror(errno));
  if (facts.st_mode & (S_IRWXG | S_IRWXO))
    throw Error(ExitCode::config, "--auth-file " + file.string() +
                                      " holds passwords but others may read or write it; "
                                      "run chmod 600 on it");
  std::ifstream in(file);
  if (!in)
    throw Error(ExitCode::config, "cannot read --auth-file " + file.string());
  BasicAuth auth;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line.empty() || line.front() == '#')
      continue;
    auto colon = line.find(':');
    if (colon == 0 || colon == std::string::npos || colon + 1 == line.size())
      throw Error(ExitCode::config, "--auth-file " + file.string() +
                                        ": each line must be user:password (a line is not)");
    auth.m_credentials.push_back(line);
  }
  if (auth.m_credentials.empty())
    throw Error(ExitCode::config, "--auth-file " + file.string() + " has no user:password line");
  return auth;
}

bool BasicAuth::allows(const std::string& authorization) const {
  constexpr std::string_view k_scheme = "Basic ";
  if (authorization.size() <= k_scheme.size() || authorization.compare(0, 6, k_scheme) != 0)
    return false;
  const std::string encoded = authorization.substr(k_scheme.size());
  std::string decoded(encoded.size(), '\0');
  size_t length = 0;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(decoded.data()), decoded.size(),
                        encoded.c_str(), encoded.size(), nullptr, &length, nullptr,
                        sodium_base64_VARIANT_ORIGINAL) != 0)
    return false;
  decoded.resize(length);
  bool found = false;
  for (const auto& credential : m_credentials) {
    // Every line is compared, equal lengths in constant time.
    if (credential.size() == decoded.size() &&
        sodium_memcmp(credential.data(), decoded.data(), decoded.size()) == 0)
      found = true;
  }
  return found;
}

}  // namespace clk::serve
