// The network file system classifier behind SQLite's refusal (man clock, EXIT STATUS, exit
// 74): statfs magic numbers as Linux reports them, whatever their sign.
#include <cstdint>
#include <filesystem>

#include <doctest/doctest.h>

#include "util/filesystem_kind.hpp"

using clk::util::network_filesystem_name;
using clk::util::network_filesystem_of;

TEST_SUITE("util::filesystem_kind") {
  TEST_CASE("NFS, SMB, CIFS, SMB2, CephFS, 9P, AFS, GPFS, Lustre and FUSE are network") {
    CHECK(network_filesystem_name(0x6969) == "NFS");
    CHECK(network_filesystem_name(0x517B) == "SMB");
    CHECK(network_filesystem_name(0xFF534D42) == "CIFS");
    CHECK(network_filesystem_name(0xFE534D42) == "SMB2");
    CHECK(network_filesystem_name(0x00C36400) == "CephFS");
    CHECK(network_filesystem_name(0x01021997) == "9P");
    CHECK(network_filesystem_name(0x5346414F) == "AFS");
    CHECK(network_filesystem_name(0x6B414653) == "AFS");
    CHECK(network_filesystem_name(0x47504653) == "GPFS");
    CHECK(network_filesystem_name(0x0BD00BD0) == "Lustre");
    CHECK(network_filesystem_name(0x65735546) == "FUSE");
  }

  TEST_CASE("a magic with the top bit set matches when sign-extended") {
    CHECK(network_filesystem_name(static_cast<std::int32_t>(0xFF534D42)) == "CIFS");
    CHECK(network_filesystem_name(static_cast<std::int32_t>(0xFE534D42)) == "SMB2");
  }

  TEST_CASE("ext4, xfs, btrfs, tmpfs and overlayfs are local") {
    CHECK_FALSE(network_filesystem_name(0xEF53));      // ext2/3/4
    CHECK_FALSE(network_filesystem_name(0x58465342));  // xfs
    CHECK_FALSE(network_filesystem_name(0x9123683E));  // btrfs
    CHECK_FALSE(network_filesystem_name(0x01021994));  // tmpfs
    CHECK_FALSE(network_filesystem_name(0x794C7630));  // overlayfs
  }

  TEST_CASE("the temporary folder is local, and a missing path is not called network") {
    CHECK_FALSE(network_filesystem_of(std::filesystem::temp_directory_path()));
    CHECK_FALSE(network_filesystem_of("/nonexistent/clock/folder"));
  }
}
