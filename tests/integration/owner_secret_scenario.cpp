#include "owner_secret_scenario.hpp"

#include <doctest/doctest.h>

#include "common_helpers.hpp"

namespace clk::test {

Result clock_as(const TestEnv& env, const Intruder& intruder,
                const std::vector<std::string>& args) {
  std::vector<std::string> argv;
  if (!intruder.host.empty()) {
    argv = {"unshare", "--uts", "sh", "-c", "hostname \"$0\" && exec \"$@\"", intruder.host};
  }
  std::vector<std::string> as_user = {"setpriv",
                                      "--reuid=" + std::to_string(intruder.uid),
                                      "--regid=" + std::to_string(intruder.uid),
                                      "--clear-groups",
                                      "--",
                                      TestEnv::clock_binary()};
  argv.insert(argv.end(), as_user.begin(), as_user.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return run(env.command(argv, intruder.env), env.path("output"));
}

void intruder_cannot_take_the_lease(const TestEnv& env,
                                    const std::map<std::string, std::string>& holder_env,
                                    const Intruder& intruder, int force_status) {
  // The intruder may enter the test directory (its HOME) but owns nothing there.
  fs::permissions(env.dir(), fs::perms::others_exec | fs::perms::group_exec, fs::perm_options::add);
  auto holder = env.spawn(env.clock_command(
      {"run", "-r", "deploy.web", "--", "sh", "-c",
       env.holding_script("deploy", "echo \"$CLOCK_OWNER\" > \"$T_DIR/credential\"")},
      holder_env));
  REQUIRE(env.await_started("deploy"));
  const std::string credential = first_line(read_file(env.path("credential")));
  const std::string secret = secret_of(credential);
  REQUIRE(secret.size() == 32);

  // Everything clock shows: the owner id, never the secret.
  Result status = clock_as(env, intruder, {"status", "--format", "json"});
  REQUIRE_EXIT(status, 0);
  auto holders = nlohmann::json::parse(status.out)["holders"];
  REQUIRE(holders.size() == 1);
  const std::string id = holders[0]["owner"];
  CHECK(id == id_of(credential));
  Result history = clock_as(env, intruder, {"history", "--format", "json"});
  REQUIRE_EXIT(history, 0);
  Result table = clock_as(env, intruder, {"status"});
  for (const Result* shown : {&status, &history, &table}) {
    CHECK_FALSE(contains(shown->out, secret));
    CHECK_FALSE(contains(shown->err, secret));
  }

  // Every attempt with what it saw, or a guessed secret, is refused (77).
  const std::string wrong = id + ".00000000000000000000000000000000";
  const std::vector<std::vector<std::string>> attempts = {
      {"release", "-r", "deploy.web", "--owner", id},
      {"renew", "-r", "deploy.web", "--owner", id},
      {"release", "-r", "deploy.web", "--owner", wrong},
      {"renew", "-r", "deploy.web", "--owner", wrong, "--ttl", "1h"},
      {"acquire", "-n", "-r", "deploy.web", "--owner", wrong},
  };
  for (const auto& attempt : attempts) {
    Result refused = clock_as(env, intruder, attempt);
    std::string words;
    for (const auto& word : attempt)
      words += word + " ";
    CAPTURE(words);
    INFO(refused.describe());
    CHECK(refused.status == 77);
    REQUIRE(refused.err_lines().size() == 1);
    CHECK(contains(refused.err, "owner " + id +
                                    " holds or waits for a lock, but this caller did not prove "
                                    "it is that owner"));
    CHECK_FALSE(contains(refused.err, secret));
  }
  Result plain = clock_as(env, intruder, {"run", "-n", "-r", "deploy.web", "--", "true"});
  CHECK_EXIT(plain, 75);
  if (force_status != 0)
    CHECK_EXIT(clock_as(env, intruder, {"release", "-r", "deploy.web", "--force"}), force_status);

  // Each refusal is in history, with the holder's lease and who asked.
  Result refusals =
      env.clock({"history", "deploy.web", "--event", "refused", "--format", "json"}, holder_env);
  REQUIRE_EXIT(refusals, 0);
  auto events = nlohmann::json::parse(refusals.out)["events"];
  INFO(events.dump(2));
  CHECK(events.size() == attempts.size());
  const std::string asker =
      std::to_string(intruder.uid) + "@" + (intruder.host.empty() ? host_name() : intruder.host);
  for (const auto& event : events) {
    CHECK(event["owner"] == id);
    CHECK(event["host"] == host_name());
    CHECK(contains(event["by"].get<std::string>(), asker + " pid "));
  }
  Result text = env.clock({"history", "deploy.web", "--event", "refused"}, holder_env);
  CHECK(contains(text.out, "by " + asker + " pid "));

  // The holder was never disturbed: it still holds, runs on and exits 0,
  // and its own release is not attributed to anyone else.
  Result still = env.clock({"status", "deploy.web", "--format", "json"}, holder_env);
  CHECK(nlohmann::json::parse(still.out)["holders"].size() == 1);
  env.let_go("deploy");
  CHECK_EXIT(holder->wait(60s), 0);
  Result released =
      env.clock({"history", "deploy.web", "--event", "released", "--format", "json"}, holder_env);
  auto ends = nlohmann::json::parse(released.out)["events"];
  REQUIRE(ends.size() == 1);
  CHECK(ends[0]["by"].is_null());
}

}  // namespace clk::test
