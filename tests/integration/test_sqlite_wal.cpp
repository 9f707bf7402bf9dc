// The SQLite WAL that clock keeps between runs (src/store/sqlite_db.cpp):
// every clock process opens the database alone and rebuilds the WAL index
// from each frame since the last checkpoint, so checkpoints come every 200
// pages instead of SQLite's 1000. They run with CLOCK_TEST_BACKEND=sqlite only.
#include <cstdint>
#include <fstream>
#include <string>

#include <doctest/doctest.h>

#include "harness.hpp"

using namespace clk::test;

namespace {

constexpr std::uintmax_t k_wal_header_bytes = 32;
constexpr std::uintmax_t k_frame_header_bytes = 24;

// The page size a WAL file records: big-endian, at byte 8 of its header.
std::uintmax_t wal_page_size(const fs::path& wal) {
  std::ifstream file(wal, std::ios::binary);
  unsigned char header[12] = {};
  file.read(reinterpret_cast<char*>(header), sizeof header);
  REQUIRE(file.gcount() == static_cast<std::streamsize>(sizeof header));
  return (std::uintmax_t{header[8]} << 24) | (std::uintmax_t{header[9]} << 16) |
         (std::uintmax_t{header[10]} << 8) | std::uintmax_t{header[11]};
}

// How many frames the WAL file has room for: its size never shrinks, so this
// is the most it held since it was created.
std::uintmax_t wal_frames(const fs::path& wal) {
  const std::uintmax_t frame_bytes = wal_page_size(wal) + k_frame_header_bytes;
  return (fs::file_size(wal) - k_wal_header_bytes) / frame_bytes;
}

}  // namespace

TEST_SUITE("sqlite-wal") {
  TEST_CASE("the WAL is checkpointed every 200 pages, so it never grows to SQLite's 1000" *
            ::clk::test::only_on("sqlite")) {
    TestEnv env;
    const fs::path file = env.path("clock.db");
    const std::string url = "sqlite:" + file.string();
    // A run writes some 17 pages (grant, release, history): 80 runs write
    // well over 1000, which SQLite's default would let the WAL reach.
    constexpr int k_runs = 80;
    for (int i = 0; i < k_runs; ++i)
      REQUIRE_EXIT(env.clock({"--database", url, "run", "-r", "job", "--", "true"}), 0);

    const fs::path wal = file.string() + "-wal";
    REQUIRE(fs::exists(wal));
    const std::uintmax_t frames = wal_frames(wal);
    INFO("WAL frames: " << frames);
    // Past the mark by at most the transaction that crossed it.
    CHECK(frames >= 100);
    CHECK(frames <= 260);
  }
}
