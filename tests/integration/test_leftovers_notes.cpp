// note_leftovers, the routine a holder calls to put what its command left
// running on its lease, as any caller meets it on PostgreSQL and MariaDB:
// all or none, each refusal with its reason, bad input refused with one
// message, and every end of a lease copying the list into its history
// record. Raw calls of this release's routine (its set) as the server's
// superuser; leases taken and ended through clock itself.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "common_helpers.hpp"
#include "harness.hpp"
#include "server_tools.hpp"

using namespace clk::test;
using nlohmann::json;

namespace {

// A command outside Latin-1: the harness's MariaDB databases default to
// latin1 (10.11's default), and a leftover's command still goes through
// clock's routines whole, which take text as utf8mb4 whatever the default.
const std::string k_two_left =
    R"([{"pid": 4242, "command": "sleep 999", "fate": "running"}, )"
    R"({"pid": 4243, "command": "upload ☃ --to s3", "fate": "running"}])";
const std::string k_one_ended = R"([{"pid": 4242, "command": "sleep 999", "fate": "ended"}])";
const std::string k_one_left = R"([{"pid": 4244, "command": "tail -f log", "fate": "running"}])";

// One call of note_leftovers: `list` is SQL (a quoted JSON text, or NULL).
struct LeftoversNote {
  std::vector<std::string> resources;
  std::string owner;  // its id
  std::vector<long long> tokens;
  std::string list;
  std::string secret;
};

server::Dialects note_leftovers_call(const std::string& set, const LeftoversNote& note) {
  std::string array, json_list, tokens, json_tokens;
  for (const auto& resource : note.resources) {
    array += (array.empty() ? "'" : ", '") + resource + "'";
    json_list += std::string(json_list.empty() ? "" : ", ") + "\"" + resource + "\"";
  }
  for (long long token : note.tokens)
    tokens += (tokens.empty() ? "" : ",") + std::to_string(token);
  const std::string tail = ", '" + note.secret + "', 'mallory@h9 pid 9')";
  return {.postgres = "SELECT " + set + ".note_leftovers('', ARRAY[" + array + "]::text[], '" +
                      note.owner + "', '{" + tokens + "}'::bigint[], " + note.list + tail,
          .mariadb = "SET NAMES utf8mb4; CALL clock_note_leftovers" + set + "('', '[" + json_list +
                     "]', '" + note.owner + "', '[" + tokens + "]', " + note.list + tail};
}

json note_reply(const TestEnv& env, const std::string& set, const LeftoversNote& note) {
  json reply = json::parse(server::sql_value(env, note_leftovers_call(set, note)));
  INFO(reply.dump());
  return reply;
}

std::string sql_text(const std::string& json_text) {
  return "'" + json_text + "'";
}

// The list on the lease of `resource`, as status shows it: the running
// ones, without their fate.
json shown_leftovers(const TestEnv& env, const std::string& resource) {
  auto holders = env.holders_of(resource);
  REQUIRE(holders.size() == 1);
  return holders[0].at("leftovers");
}

// What status shows of a noted list of running leftovers.
json as_shown(const std::string& list) {
  json shown = json::parse(list);
  for (auto& leftover : shown)
    leftover.erase("fate");
  return shown;
}

void expire_lease(const TestEnv& env, const std::string& resource) {
  REQUIRE_EXIT(
      server::sql(env, {.postgres = "UPDATE clock.leases SET expires_at = now() - interval '1 s' "
                                    "WHERE resource = '" +
                                    resource + "'",
                        .mariadb = "UPDATE leases SET expires_us = clock_now_us() - 1000 WHERE "
                                   "resource = '" +
                                   resource + "'"}),
      0);
}

// The leftovers of the newest history event `kind` of `resource`.
json recorded_leftovers(const TestEnv& env, const std::string& resource, const std::string& kind) {
  Result listed = env.clock({"history", resource, "--event", kind, "--format", "json"});
  REQUIRE_EXIT(listed, 0);
  auto events = json::parse(listed.out).at("events");
  REQUIRE_MESSAGE(!events.empty(), "no " << kind << " event of " << resource);
  return events.front().at("leftovers");
}

}  // namespace

TEST_SUITE("run") {
  TEST_CASE(
      "note_leftovers is all or none: a lease not held, under another token or expired is "
      "refused with its reason and nothing is written; [] and NULL clear the list" *
      server::only_on_servers()) {
    TestEnv env;
    Acquired held = env.acquire({"-r", "two.a", "-r", "two.b", "--ttl", "1h"});
    const std::string id = id_of(held.credential);
    const std::string secret = secret_of(held.credential);
    const std::string set = server::routine_set(env);
    const LeftoversNote both{{"two.a", "two.b"}, id, {}, sql_text(k_two_left), secret};
    CHECK(note_reply(env, set, both).at("outcome") == "noted");
    CHECK(shown_leftovers(env, "two.a") == as_shown(k_two_left));  // the UTF-8 command intact

    auto refused = [&](LeftoversNote note) {
      note.list = sql_text(k_one_ended);
      json reply = note_reply(env, set, note);
      CHECK(reply.at("outcome") == "not_owner");
      CHECK(shown_leftovers(env, "two.a") == as_shown(k_two_left));
      return reply.at("lost");
    };
    CHECK(refused({{"two.a", "gone"}, id, {}, "", secret}) ==
          json::parse(R"([{"resource": "gone", "reason": "gone"}])"));
    CHECK(refused({{"two.a"}, random_uuid(), {}, "", secret}) ==
          json::parse(R"([{"resource": "two.a", "reason": "gone"}])"));
    CHECK(refused({{"two.a", "two.b"}, id, {999998, 999999}, "", secret}) ==
          json::parse(R"([{"resource": "two.a", "reason": "token"}, )"
                      R"({"resource": "two.b", "reason": "token"}])"));
    CHECK(refused({{"two.a", "two.b"}, id, {}, "", "wrong"}) ==
          json::parse(R"([{"resource": "two.a", "reason": "not_proven"}, )"
                      R"({"resource": "two.b", "reason": "not_proven"}])"));
    expire_lease(env, "two.b");
    CHECK(refused({{"two.a", "two.b"}, id, {}, "", secret}) ==
          json::parse(R"([{"resource": "two.b", "reason": "expired"}])"));
    CHECK(env.holders_of("two.b", true).size() == 1);  // left for the next renewal
    Result history = env.clock({"history", "--format", "json"});
    for (const auto& event : json::parse(history.out).at("events")) {
      INFO(event.dump());
      CHECK((event.at("event") == "acquired" || event.at("event") == "refused"));
      CHECK(event.at("leftovers").empty());  // a refusal keeps no list
    }

    const long long token = env.holders_of("two.a").at(0).at("token").get<long long>();
    CHECK(note_reply(env, set, {{"two.a"}, id, {token}, sql_text("[]"), secret}).at("outcome") ==
          "noted");
    CHECK(shown_leftovers(env, "two.a").empty());
    CHECK(note_reply(env, set, {{"two.a"}, id, {}, sql_text(k_one_left), secret}).at("outcome") ==
          "noted");  // tokens [] (any) note too
    CHECK(shown_leftovers(env, "two.a") == as_shown(k_one_left));
    CHECK(note_reply(env, set, {{"two.a"}, id, {}, "NULL", secret}).at("outcome") == "noted");
    CHECK(shown_leftovers(env, "two.a").empty());
  }

  TEST_CASE(
      "note_leftovers refuses a list that is not a JSON array, tokens that are not one per "
      "resource and an owner that is not a UUID, with PostgreSQL's message on both servers" *
      server::only_on_servers()) {
    TestEnv env;
    Acquired held = env.acquire({"-r", "two.a", "-r", "two.b"});
    const std::string id = id_of(held.credential);
    const std::string secret = secret_of(held.credential);
    const std::string set = server::routine_set(env);
    // PostgreSQL's parameters are typed: a text that is not JSON or not a
    // UUID fails its cast before the function runs.
    const bool postgres = backend_name() == "postgres";
    const std::string message =
        "note_leftovers: invalid owner, tokens (one per resource, or none) or leftovers";
    const std::vector<std::pair<LeftoversNote, std::string>> invalid = {
        {{{"two.a"}, id, {}, sql_text(R"([{"pid": 1)"), secret},
         postgres ? "invalid input syntax for type json" : message},
        {{{"two.a"}, id, {}, sql_text(R"({"pid": 1})"), secret}, message},
        {{{"two.a"}, id, {}, sql_text(R"("sleep")"), secret}, message},
        {{{"two.a", "two.b"}, id, {held.tokens.at(0)}, sql_text("[]"), secret}, message},
        {{{"two.a"}, "not-a-uuid", {}, sql_text("[]"), secret},
         postgres ? "invalid input syntax for type uuid" : message}};
    for (const auto& [note, refusal] : invalid) {
      Result refused = server::sql(env, note_leftovers_call(set, note));
      INFO(refused.describe());
      CHECK(refused.status != 0);
      CHECK(contains(refused.err, refusal));
    }
    Result bad_name =
        server::sql(env, note_leftovers_call(set, {{"a..b"}, id, {}, sql_text("[]"), secret}));
    CHECK(bad_name.status != 0);
    CHECK(contains(bad_name.err, "invalid resource name 'a..b'"));
    CHECK(shown_leftovers(env, "two.a").empty());
  }

  TEST_CASE(
      "every end of a lease copies its list into the history record: released, forced, "
      "expired (by a release, a forced release, gc and a grant over it) and lost by a renewal" *
      server::only_on_servers()) {
    TestEnv env;
    REQUIRE_EXIT(env.clock({"init"}), 0);
    const std::string set = server::routine_set(env);
    // A lease on `resource` with `list` noted on it; its credential.
    auto noted_lease = [&](const std::string& resource, const std::string& list) {
      Acquired held = env.acquire({"-r", resource, "--ttl", "1h"});
      const std::string secret = secret_of(held.credential);
      REQUIRE(note_reply(env, set, {{resource}, id_of(held.credential), {}, sql_text(list), secret})
                  .at("outcome") == "noted");
      return held.credential;
    };
    const json left = json::parse(k_two_left), ended = json::parse(k_one_ended);

    CHECK_EXIT(env.clock({"release", "-r", "job", "--owner", noted_lease("job", k_two_left)}), 0);
    CHECK(recorded_leftovers(env, "job", "released") == left);
    CHECK(recorded_leftovers(env, "job", "acquired").empty());

    noted_lease("forced", k_two_left);
    noted_lease("forced2", k_one_ended);
    expire_lease(env, "forced2");
    CHECK_EXIT(env.clock({"release", "--force", "-r", "forced", "-r", "forced2"}), 0);
    CHECK(recorded_leftovers(env, "forced", "forced") == left);
    CHECK(recorded_leftovers(env, "forced2", "expired") == ended);

    const std::string late = noted_lease("rel.late", k_two_left);
    expire_lease(env, "rel.late");
    env.clock({"release", "-r", "rel.late", "--owner", late});  // too late: its exit aside
    CHECK(recorded_leftovers(env, "rel.late", "expired") == left);

    noted_lease("gc", k_one_ended);
    expire_lease(env, "gc");
    CHECK_EXIT(env.clock({"gc"}), 0);
    CHECK(recorded_leftovers(env, "gc", "expired") == ended);

    noted_lease("taken", k_two_left);
    expire_lease(env, "taken");
    env.acquire({"-r", "taken.sub"});
    CHECK(recorded_leftovers(env, "taken", "expired") == left);

    // A release that only lowers the depth ends nothing: the list stays.
    const std::string twice = noted_lease("reentered", k_one_left);
    REQUIRE_EXIT(env.clock({"acquire", "-r", "reentered", "--owner", twice}), 0);
    CHECK_EXIT(env.clock({"release", "-r", "reentered", "--owner", twice}), 0);
    CHECK(shown_leftovers(env, "reentered") == as_shown(k_one_left));

    const std::string lost = noted_lease("lost.late", k_two_left);
    expire_lease(env, "lost.late");
    env.clock({"renew", "-r", "lost.late", "--owner", lost});  // the lease is lost: its exit aside
    CHECK(recorded_leftovers(env, "lost.late", "lost") == left);
  }

  TEST_CASE(
      "notes of two hierarchies each and forced releases of others in four orders, at once: "
      "no server deadlock, every note noted" *
      server::only_on_servers() * doctest::timeout(300)) {
    TestEnv env;
    Acquired held = env.acquire(
        {"-r", "c1.own", "-r", "c2.own", "-r", "c3.own", "-r", "c4.own", "--ttl", "1h"});
    const std::string id = id_of(held.credential);
    const std::string secret = secret_of(held.credential);
    const std::string set = server::routine_set(env);
    const std::vector<std::vector<std::string>> orders = {{"c1.x", "c2.x", "c3.x", "c4.x"},
                                                          {"c4.x", "c3.x", "c2.x", "c1.x"},
                                                          {"c2.x", "c4.x", "c1.x", "c3.x"},
                                                          {"c3.x", "c1.x", "c4.x", "c2.x"}};
    std::vector<std::unique_ptr<Process>> loops;
    for (int i = 0; i < 4; ++i) {
      std::string array, json_list;
      for (const auto& resource : orders[i]) {
        array += (array.empty() ? "'" : ", '") + resource + "'";
        json_list += std::string(json_list.empty() ? "" : ", ") + "\"" + resource + "\"";
      }
      // Statement by statement (a file the client reads), each its own transaction.
      std::string script;
      for (int n = 1; n <= 25; ++n) {
        const LeftoversNote note{
            {"c" + std::to_string(i + 1) + ".own", "c" + std::to_string((i + 1) % 4 + 1) + ".own"},
            id,
            {},
            sql_text(R"([{"pid": )" + std::to_string(n) +
                     R"(, "command": "c", "fate": "running"}])"),
            secret};
        const server::Dialects call = note_leftovers_call(set, note);
        script += backend_name() == "postgres"
                      ? "SELECT " + set + ".force_release('', ARRAY[" + array + "], 'loop');\n" +
                            call.postgres + ";\n"
                      : "CALL clock_force_release" + set + "('', '[" + json_list +
                            "]', 'loop');\n" + call.mariadb + ";\n";
      }
      const fs::path file = env.path("loop" + std::to_string(i) + ".sql");
      write_file(file, script);
      loops.push_back(env.spawn(server::sql_command(
          env, {.postgres = "\\i " + file.string(), .mariadb = "source " + file.string()})));
    }
    for (auto& loop : loops) {
      Result result = loop->wait(240s);
      INFO(result.describe());
      CHECK_EXIT(result, 0);
      std::size_t noted = 0;
      for (auto at = result.out.find("\"noted\""); at != std::string::npos;
           at = result.out.find("\"noted\"", at + 1))
        ++noted;
      CHECK(noted == 25);
    }
  }

  // PostgreSQL's columns are jsonb, and a function call is one statement.
  TEST_CASE(
      "MariaDB's leftovers columns refuse text that is not JSON, and a note that fails part-way "
      "changes nothing" *
      only_on("mariadb")) {
    TestEnv env;
    Acquired held = env.acquire({"-r", "t.a", "-r", "boom"});
    const std::string secret = secret_of(held.credential);
    const std::string set = server::routine_set(env);
    Result not_json = server::sql(
        env, {.mariadb = "UPDATE leases SET leftovers = 'pid 4242' WHERE resource = 't.a'"});
    CHECK(not_json.status != 0);
    CHECK(contains(not_json.err, "ERROR 4025"));

    const LeftoversNote note{{"t.a", "boom"}, id_of(held.credential), {}, "", secret};
    auto with_list = [&](const std::string& list) {
      LeftoversNote changed = note;
      changed.list = sql_text(list);
      return note_leftovers_call(set, changed);
    };
    REQUIRE(json::parse(server::sql_value(env, with_list(k_one_left))).at("outcome") == "noted");
    REQUIRE_EXIT(server::sql(env, {.mariadb = "DELIMITER //\n"
                                              "CREATE TRIGGER test_boom BEFORE UPDATE ON leases "
                                              "FOR EACH ROW IF NEW.resource = 'boom' THEN "
                                              "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'boom'; "
                                              "END IF //\nDELIMITER ;"}),
                 0);
    Result failed = server::sql(env, with_list(k_two_left));
    server::sql(env, {.mariadb = "DROP TRIGGER test_boom"});
    INFO(failed.describe());
    CHECK(failed.status != 0);
    CHECK(contains(failed.err, "boom"));
    CHECK(shown_leftovers(env, "t.a") == as_shown(k_one_left));
  }
}
