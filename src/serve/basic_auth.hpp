// Optional HTTP basic authentication of `clock serve --auth-file FILE`:
// lines of user:password, the file readable by its owner only.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace clk::serve {

class BasicAuth {
 public:
  // Reads the file; throws clk::Error(config, 78) if it cannot be read, is
  // readable or writable by group or others, or has no user:password line.
  static BasicAuth from_file(const std::filesystem::path& file);

  // Whether an Authorization header value names one of the users with its
  // password (compared in constant time).
  bool allows(const std::string& authorization) const;

 private:
  std::vector<std::string> m_credentials;  // "user:password"
};

}  // namespace clk::serve
