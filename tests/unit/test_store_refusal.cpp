// store::refusal_error and store::describe(Cycle): the words both stores use.
#include <doctest/doctest.h>

#include "store/store.hpp"

using namespace clk;
using namespace clk::store;

namespace {

lock::Resource resource(const char* name) {
  return lock::Resource::parse(name);
}

}  // namespace

TEST_CASE("a refusal of the lock model is a usage error, a lease not held is not_owner") {
  auto owner = lock::OwnerId::parse("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa");
  CHECK(refusal_error(Operation::acquire, {Refusal::slots_mismatch, resource("x"), 2, 3}, owner)
            .code() == ExitCode::usage);
  CHECK(refusal_error(Operation::acquire, {Refusal::upgrade, resource("x")}, owner).code() ==
        ExitCode::usage);
  for (auto reason : {Refusal::gone, Refusal::expired, Refusal::other_token, Refusal::other_owner,
                      Refusal::not_held, Refusal::nobody_holds}) {
    CHECK(refusal_error(Operation::release, {reason, resource("x")}, owner).code() ==
          ExitCode::not_owner);
  }
}

TEST_CASE("an expired lease is worded for the operation that found it") {
  Refused expired{Refusal::expired, resource("db.main")};
  CHECK(std::string(refusal_error(Operation::renew, expired, std::nullopt).what()) ==
        "the lease on db.main expired before this renewal; it cannot be renewed");
  CHECK(std::string(refusal_error(Operation::release, expired, std::nullopt).what()) ==
        "the lease on db.main had expired before this release; another owner may have held it "
        "since");
  CHECK(std::string(
            refusal_error(Operation::renew, {Refusal::other_token, resource("x")}, std::nullopt)
                .what()) ==
        "the lease on x was lost and is now held under another token; it cannot be renewed");
}

TEST_CASE("a slot count mismatch says which count to use") {
  auto words = [](int ours, int theirs) {
    return std::string(refusal_error(Operation::acquire,
                                     {Refusal::slots_mismatch, resource("pool"), ours, theirs},
                                     std::nullopt)
                           .what());
  };
  CHECK(words(2, 0) ==
        "pool is held or awaited as a plain lock, but this request says --slots 2; drop --slots "
        "or use another resource");
  CHECK(words(0, 3) == "pool is a semaphore of 3 slots: add --slots 3");
  CHECK(words(2, 3) ==
        "pool is a semaphore of 3 slots, but this request says --slots 2; use the same number");
}

TEST_CASE("a cycle is worded from the requester back to the requester") {
  auto a = lock::OwnerId::parse("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa");
  auto b = lock::OwnerId::parse("bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb");
  Cycle cycle{{a, "web1", resource("y")}, {b, "", resource("x")}};
  CHECK(describe(cycle) ==
        "owner aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa (web1) -> y -> owner "
        "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb -> x -> owner "
        "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa (web1)");
}

TEST_CASE("a release is attributed to who asked unless it comes from the holder's process tree") {
  lock::OwnerInfo holder{.host = "web1",
                         .ip = "",
                         .pid = 42,
                         .user = "deploy",
                         .command = "",
                         .started = {},
                         .db_user = ""};
  Caller child{"deploy", "web1", 77, {77, 50, 42, 7}};
  Caller stranger{"app", "web1", 78, {78, 51, 7}};
  Caller elsewhere{"deploy", "web2", 77, {77, 50, 42, 7}};
  CHECK(by_of(child, holder).empty());
  CHECK(by_of(stranger, holder) == "app@web1 pid 78");
  CHECK(by_of(elsewhere, holder) == "deploy@web2 pid 77");
}

TEST_CASE("a refusal for want of the secret names the owner and says what proves it") {
  auto owner = lock::OwnerId::parse("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa");
  auto error = refusal_error(Operation::release, {Refusal::not_proven, resource("x")}, owner);
  CHECK(error.code() == ExitCode::not_owner);
  std::string text = error.what();
  CHECK(text.find("owner aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa holds or waits for a lock, but this "
                  "caller did not prove it is that owner") == 0);
  CHECK(text.find("in its name on x without") != std::string::npos);
  CHECK(text.find("clock acquire --format shell") != std::string::npos);
}
