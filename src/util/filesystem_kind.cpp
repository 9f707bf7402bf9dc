// statfs(2) magic numbers of network file systems (linux/magic.h and the
// file systems' own headers; not all are in linux/magic.h).
#include "util/filesystem_kind.hpp"

#include <sys/vfs.h>
#include <utility>

namespace clk::util {

std::optional<std::string> network_filesystem_name(std::int64_t f_type) {
  // f_type is a signed long: magics with the top bit set come back negative
  // from a 32-bit field sign-extended, so compare the low 32 bits.
  static const std::pair<std::uint32_t, const char*> k_network[] = {
      {0x6969, "NFS"},        {0x517B, "SMB"},        {0xFF534D42, "CIFS"}, {0xFE534D42, "SMB2"},
      {0x00C36400, "CephFS"}, {0x01021997, "9P"},     {0x5346414F, "AFS"},  {0x6B414653, "AFS"},
      {0x47504653, "GPFS"},   {0x0BD00BD0, "Lustre"}, {0x65735546, "FUSE"}};
  const auto low = static_cast<std::uint32_t>(f_type);
  for (const auto& [magic, name] : k_network) {
    if (low == magic)
      return std::string(name);
  }
  return std::nullopt;
}

std::optional<std::string> network_filesystem_of(const std::filesystem::path& path) {
  struct statfs info {};
  if (statfs(path.c_str(), &info) != 0)
    return std::nullopt;
  return network_filesystem_name(static_cast<std::int64_t>(info.f_type));
}

}  // namespace clk::util
