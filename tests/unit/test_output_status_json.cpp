// clock serve renders the status JSON with render_status_json_draining, which
// frees each holder as it goes: its text must be clock status's, byte for byte.
#include <chrono>
#include <optional>
#include <string>

#include <doctest/doctest.h>

#include "output/render.hpp"

using namespace clk;
using namespace std::chrono_literals;

namespace {

// `count` holders whose strings are past the short-string size (so that each
// has heap memory to free), one expired, one with leftovers and no expiry; a
// waiter and an expected period.
store::Snapshot sample(int count) {
  store::Snapshot snapshot;
  snapshot.now = lock::Instant(std::chrono::milliseconds(1'790'000'000'000));
  for (int i = 0; i < count; ++i) {
    lock::Lease lease{
        .ns = i % 3 == 0 ? "" : "team-" + std::to_string(i % 7),
        .resource = lock::Resource::parse("fleet.job" + std::to_string(i)),
        .owner = lock::OwnerId::parse("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"),
        .info = {.host = "host-" + std::to_string(i) + ".example.org",
                 .ip = "192.0.2." + std::to_string(i % 250),
                 .pid = 1000 + i,
                 .user = "deploy",
                 .command = "sh -c 'nightly import --batch " + std::to_string(i) + " \"quoted\"'",
                 .started = snapshot.now - 90s,
                 .db_user = "clock_app"},
        .mode = lock::Mode::exclusive,
        .slots = 0,
        .token = 100 + i,
        .depth = 1,
        .acquired_at = snapshot.now - 60s,
        .renewed_at = snapshot.now - 5s,
        .expires_at = i == 1 ? std::nullopt : std::optional(snapshot.now + 30s),
        .leftovers = {},
    };
    if (i == 1)
      lease.leftovers = {{4242, "sleep 999", lock::LeftoverFate::running}};
    snapshot.holders.push_back(lease);
    snapshot.holder_expired.push_back(i == 2);
  }
  lock::Waiter waiter{
      .ns = "",
      .resource = lock::Resource::parse("fleet.job0"),
      .owner = lock::OwnerId::parse("bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"),
      .info = {.host = "web2",
               .ip = "",
               .pid = 4,
               .user = "deploy",
               .command = "true",
               .started = snapshot.now - 3s,
               .db_user = ""},
      .mode = lock::Mode::shared,
      .slots = 0,
      .position = 7,
      .since = snapshot.now - 2s,
  };
  snapshot.waiters.push_back(waiter);
  store::ExpectedRuns expected;
  expected.now = snapshot.now;
  expected.runs.push_back(
      {"", lock::Resource::parse("fleet.job0"), 3600s, snapshot.now - 48h, {snapshot.now - 30min}});
  snapshot.expected = expected;
  return snapshot;
}

}  // namespace

TEST_CASE("the draining status JSON is clock status's JSON, and frees every holder it wrote") {
  for (int count : {0, 1, 2500}) {
    CAPTURE(count);
    store::Snapshot kept = sample(count);
    store::Snapshot drained = sample(count);
    int calls = 0;
    std::string text = output::render_status_json_draining(drained, [&] { ++calls; });
    CHECK(text == output::render_status(kept, output::Format::json));
    CHECK(calls == count / 1000);
    for (const auto& holder : drained.holders)
      CHECK(holder.info.command.empty());
  }
}
