// The SQLite WAL that clock keeps between runs (src/store/sqlite/db.cpp):
// every clock process opens the database alone and rebuilds the WAL index
// from each frame since the last checkpoint, so checkpoints come every 200
// pages instead of SQLite's 1000, and clock run checkpoints sooner while its
// command runs (Store::use_idle_time). They run with CLOCK_TEST_BACKEND=sqlite
// only.
#include <algorithm>
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
  TEST_CASE(
      "clock run checkpoints the WAL while its command runs, so it stays far below the automatic "
      "mark of 200 pages (and SQLite's 1000)" *
      ::clk::test::only_on("sqlite")) {
    TestEnv env;
    const fs::path file = env.path("clock.db");
    const std::string url = "sqlite:" + file.string();
    // A run writes some 20 pages (grant, release, history): 80 runs write
    // well over 1000, which SQLite's default would let the WAL reach, and
    // the automatic checkpoint alone lets it reach 200.
    constexpr int k_runs = 80;
    for (int i = 0; i < k_runs; ++i)
      REQUIRE_EXIT(env.clock({"--database", url, "run", "-r", "job", "--", "true"}), 0);

    const fs::path wal = file.string() + "-wal";
    REQUIRE(fs::exists(wal));
    const std::uintmax_t frames = wal_frames(wal);
    INFO("WAL frames: " << frames);
    // The idle-time mark (60 pages) and a run past it, for a run that found
    // the WAL just under the mark; the automatic checkpoint alone lets it
    // reach 200 and more.
    CHECK(frames >= 20);
    CHECK(frames <= 130);
  }

  TEST_CASE(
      "clock acquire and clock release, one commit per process, truncate the WAL at the mark of "
      "200 pages, so it never grows to SQLite's 1000" *
      ::clk::test::only_on("sqlite")) {
    TestEnv env;
    const fs::path file = env.path("clock.db");
    const fs::path wal = file.string() + "-wal";
    const std::string url = "sqlite:" + file.string();
    // An acquire and a release write some 20 pages between them: 80 rounds
    // write well over 1000. A checkpoint that a later process does not see
    // as done (a passive one) let the WAL grow without end here.
    const std::string owner = random_owner();
    constexpr int k_rounds = 80;
    std::uintmax_t most = 0;
    for (int i = 0; i < k_rounds; ++i) {
      REQUIRE_EXIT(env.clock({"--database", url, "acquire", "-r", "job", "--owner", owner}), 0);
      REQUIRE_EXIT(env.clock({"--database", url, "release", "-r", "job", "--owner", owner}), 0);
      REQUIRE(fs::exists(wal));
      if (fs::file_size(wal) > k_wal_header_bytes)
        most = std::max(most, wal_frames(wal));
    }
    INFO("most WAL frames: " << most);
    // Close to the mark (a commit writes some ten pages), never past it by
    // more than the commit that crossed it, which truncates the WAL.
    CHECK(most >= 150);
    CHECK(most <= 260);
  }

  TEST_CASE(
      "a new database has pages of 1 KiB, so each process's WAL recovery checksums a quarter of "
      "the bytes; one made with 4 KiB pages keeps them and serves as before" *
      ::clk::test::only_on("sqlite")) {
    TestEnv env;
    const fs::path fresh = env.path("fresh.db");
    const fs::path older = env.path("older.db");
    // An empty file counts as new too (touch, or a run that died before
    // its first write).
    const fs::path empty = env.path("empty.db");
    std::ofstream{empty};
    REQUIRE_EXIT(env.shell("sqlite3 \"$DB\" 'PRAGMA page_size = 4096; CREATE TABLE t (x); DROP "
                           "TABLE t'",
                           {{"DB", older.string()}}),
                 0);
    for (const fs::path& file : {fresh, older, empty})
      REQUIRE_EXIT(
          env.clock({"--database", "sqlite:" + file.string(), "run", "-r", "job", "--", "true"}),
          0);
    auto page_size = [&](const fs::path& file) {
      Result shown = env.shell("sqlite3 \"$DB\" 'PRAGMA page_size'", {{"DB", file.string()}});
      REQUIRE_EXIT(shown, 0);
      return std::stoi(shown.out);
    };
    CHECK(page_size(fresh) == 1024);
    CHECK(page_size(empty) == 1024);
    CHECK(page_size(older) == 4096);
    CHECK(wal_page_size(fresh.string() + "-wal") == 1024);
    CHECK(wal_page_size(older.string() + "-wal") == 4096);
    const std::string older_url = "sqlite:" + older.string();
    REQUIRE_EXIT(env.clock({"--database", older_url, "acquire", "-r", "kept", "--ttl", "60s"}), 0);
    Result shown = env.clock({"--database", older_url, "status"});
    CHECK_EXIT(shown, 0);
    CHECK(shown.out.find("kept") != std::string::npos);
  }
}
