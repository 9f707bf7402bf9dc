// One owner, one proof (man clock, Owners and re-entry): once an owner id holds or waits for
// anything, every act in its name needs its secret, not only the acts on the
// lease the secret was given for. A caller that read an id from `status`
// gets no lock, no queue turn, no queue exit and no history record in that
// owner's name: each attempt is refused (77) and recorded with who asked.
#include <cstdlib>

#include <doctest/doctest.h>

#include "common_helpers.hpp"
#include "harness.hpp"
#include "mariadb_tools.hpp"
#include "postgres_tools.hpp"

using namespace clk::test;
using nlohmann::json;

namespace {

// The same id with another secret: what a caller that read the id has.
std::string forged(const std::string& id) {
  return id + ".0123456789abcdef0123456789abcdef";
}

json proof_events(const TestEnv& env, const std::vector<std::string>& args) {
  std::vector<std::string> full = {"history", "--format", "json", "--limit", "1000"};
  full.insert(full.end(), args.begin(), args.end());
  Result history = env.clock(full);
  INFO(history.describe());
  REQUIRE(history.status == 0);
  return json::parse(history.out)["events"];
}

std::size_t count_events(const json& events, const std::string& kind, const std::string& owner) {
  std::size_t count = 0;
  for (const auto& event : events)
    count += event["event"] == kind && event["owner"] == owner;
  return count;
}

}  // namespace

TEST_SUITE("owner proof") {
  TEST_CASE("a held owner id with another secret is granted nothing, related or not: 77") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "deploy"});
    Acquired nested = env.acquire({"-r", "svc.api"});
    for (const auto& [resource, id] : std::vector<std::pair<std::string, std::string>>{
             {"deploy.db", holder.owner},  // a descendant of the held lock
             {"svc", nested.owner},        // an ancestor
             {"unrelated", holder.owner},  // anything else
         }) {
      for (const char* wait : {"-n", "-w"}) {
        std::vector<std::string> args = {"acquire", wait};
        if (std::string(wait) == "-w")
          args.push_back("300ms");
        args.insert(args.end(), {"-r", resource, "--owner", forged(id)});
        Result refused = env.clock(args);
        INFO(refused.describe());
        CHECK(refused.status == 77);
        REQUIRE(refused.err_lines().size() == 1);
        CHECK(contains(refused.err, "owner " + id + " holds or waits for a lock, but this caller"));
        CHECK(env.holders_of(resource).empty());
      }
    }
    // Recorded with who asked; the holders keep their locks and tokens.
    auto events = proof_events(env, {"--event", "refused"});
    INFO(events.dump(2));
    CHECK(count_events(events, "refused", holder.owner) == 4);
    CHECK(count_events(events, "refused", nested.owner) == 2);
    // Who asked, as it claims, and the login that really did: the database
    // role on PostgreSQL, the user whose process wrote the file on SQLite.
    for (const auto& event : events) {
      CHECK(contains(event["by"].get<std::string>(), "@" + host_name() + " pid "));
      REQUIRE(event["db_user"].is_string());
      CHECK_FALSE(event["db_user"].get<std::string>().empty());
    }
    CHECK(contains(env.clock({"history", "--event", "refused"}).out, "LOGIN"));
    CHECK(env.holders_of("deploy")[0]["db_user"] == events[0]["db_user"]);
    REQUIRE(env.holders_of("deploy").size() == 1);
    CHECK(env.holders_of("deploy")[0]["token"] == holder.token());
    // The genuine owner's nested lock is still its own to take.
    CHECK_EXIT(env.clock({"acquire", "-n", "-r", "deploy.db", "--owner", holder.credential}), 0);
    CHECK_EXIT(env.clock({"run", "-n", "-r", "unrelated", "--", "true"},
                         {{"CLOCK_OWNER", holder.credential}}),
               0);
  }

  TEST_CASE("a queued waiter's id with another secret neither takes its turn nor evicts it") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "q"});
    const std::string waiter = random_owner();
    auto queued = env.spawn(env.clock_command(
        {"run", "-w", "60s", "-r", "q", "--", "sh", "-c", "echo ran > \"$T_DIR/waiter.ran\""},
        {{"CLOCK_OWNER", waiter}}));
    REQUIRE(await([&] { return !env.status()["waiters"].empty(); }, 30s));
    const std::string id = id_of(waiter);
    // Every way a caller that read the id could try to take the turn or
    // leave the queue in its name: -n in a loop, a short wait, a run.
    for (int i = 0; i < 3; ++i)
      CHECK_EXIT(env.clock({"acquire", "-n", "-r", "q", "--owner", forged(id)}), 77);
    CHECK_EXIT(env.clock({"acquire", "-w", "300ms", "-r", "q", "--owner", forged(id)}), 77);
    CHECK_EXIT(
        env.clock({"run", "-w", "300ms", "-r", "q", "--", "true"}, {{"CLOCK_OWNER", forged(id)}}),
        77);
    auto waiters = env.status()["waiters"];
    REQUIRE(waiters.size() == 1);
    CHECK(waiters[0]["owner"] == id);
    // A later arrival stays behind the genuine waiter.
    auto later = env.spawn(env.clock_command(
        {"run", "-w", "60s", "-r", "q", "--", "sh", "-c", "echo ran > \"$T_DIR/later.ran\""}));
    REQUIRE(await([&] { return env.status()["waiters"].size() == 2; }, 30s));
    CHECK(env.status()["waiters"][0]["owner"] == id);
    CHECK_EXIT(env.clock({"release", "-r", "q", "--owner", holder.credential}), 0);
    CHECK_EXIT(queued->wait(60s), 0);
    CHECK_EXIT(later->wait(60s), 0);
    CHECK(read_file(env.path("waiter.ran")) == "ran\n");
    auto granted = proof_events(env, {"q", "--event", "acquired"});
    INFO(granted.dump(2));
    REQUIRE(granted.size() == 3);
    CHECK(granted[1]["owner"] == id);  // newest first: the later one, the waiter, the holder
    CHECK(count_events(proof_events(env, {"q", "--event", "refused"}), "refused", id) == 5);
  }

  TEST_CASE("renew in another owner's name writes no lost record; a real loss still does") {
    TestEnv env;
    Acquired holder = env.acquire({"-r", "a"});
    // Bound to its secret: refused and recorded as refused, not as lost.
    CHECK_EXIT(env.clock({"renew", "-r", "x", "--owner", forged(holder.owner)}), 77);
    CHECK_EXIT(env.clock({"renew", "-r", "a", "--owner", forged(holder.owner)}), 77);
    // An id that holds nothing and never held x: 77, and nothing recorded.
    const std::string stranger = random_owner();
    CHECK_EXIT(env.clock({"renew", "-r", "x", "--owner", stranger}), 77);
    auto events = proof_events(env, {});
    INFO(events.dump(2));
    CHECK(count_events(events, "lost", holder.owner) == 0);
    CHECK(count_events(events, "lost", id_of(stranger)) == 0);
    CHECK(count_events(events, "refused", holder.owner) == 2);
    // The holder's own renewal of a lease forced away is a loss, recorded.
    CHECK_EXIT(env.clock({"release", "--force", "-r", "a"}), 0);
    CHECK_EXIT(env.clock({"renew", "-r", "a", "--owner", holder.credential}), 77);
    CHECK(count_events(proof_events(env, {"a", "--event", "lost"}), "lost", holder.owner) == 1);
  }

  TEST_CASE(
      "a server that logs statement parameters is named, and log_parameter_max_length = 0 "
      "keeps secrets out of its log" *
      only_on("postgres")) {
    TestEnv env;
    const char* log = std::getenv("CLOCK_TEST_PG_LOG");
    REQUIRE(log != nullptr);
    const std::string db = pg::dbname_of(env.url());
    REQUIRE_EXIT(env.clock({"init"}), 0);
    REQUIRE_EXIT(pg::psql(env, "ALTER DATABASE " + db + " SET log_min_duration_statement = 0"), 0);
    Result warned = env.clock({"-v", "status"});
    CHECK(contains(warned.err, "logs statements with their parameters"));
    CHECK(contains(warned.err, "log_parameter_max_length = 0"));
    // What a log reader gets today: the secret of every acquire, renew and
    // release, as a bind parameter.
    Acquired logged = env.acquire({"-r", "x"});
    const std::string logged_secret = secret_of(logged.credential);
    CHECK(await([&] { return contains(read_file(log), logged_secret); }, 10s));

    REQUIRE_EXIT(pg::psql(env, "ALTER DATABASE " + db + " SET log_parameter_max_length = 0"), 0);
    Result quiet = env.clock({"-v", "status"});
    CHECK_FALSE(contains(quiet.err, "logs statements with their parameters"));
    const std::size_t before = read_file(log).size();
    Acquired kept = env.acquire({"-r", "y"});
    CHECK_EXIT(env.clock({"release", "-r", "y", "--owner", kept.credential}), 0);
    const std::string kept_secret = secret_of(kept.credential);
    // Its statements are logged (the release's is the last), without values.
    auto logged_since = [&] { return read_file(log).substr(before); };
    CHECK(await(
        [&] {
          auto since = logged_since();
          return contains(since, "release(") || contains(since, "release2(");
        },
        10s));
    CHECK(contains(logged_since(), "try_acquire("));
    CHECK_FALSE(contains(logged_since(), kept_secret));
  }

  // MariaDB's general log writes every statement with its values, owner
  // secrets included; it is the server's, not a database's: set for this
  // test only, and put back as it was.
  TEST_CASE("a MariaDB server whose general log is on is named by clock init" *
            only_on("mariadb")) {
    TestEnv env;
    const std::string was = maria::sql(env, "SELECT @@GLOBAL.general_log").out.substr(0, 1);
    REQUIRE((was == "0" || was == "1"));
    struct PutBack {
      const TestEnv& env;
      std::string value;
      ~PutBack() { maria::sql(env, "SET GLOBAL general_log = " + value); }
    } put_back{env, was};
    REQUIRE_EXIT(maria::sql(env, "SET GLOBAL general_log = 1"), 0);
    Result warned = env.clock({"init"});
    CHECK_EXIT(warned, 0);
    CHECK(contains(warned.err, "general log, so owner secrets reach it"));
    REQUIRE_EXIT(maria::sql(env, "SET GLOBAL general_log = 0"), 0);
    Result quiet = env.clock({"init"});
    CHECK_EXIT(quiet, 0);
    CHECK_FALSE(contains(quiet.err, "owner secrets"));
  }
}
