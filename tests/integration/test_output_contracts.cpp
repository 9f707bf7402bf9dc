// The machine-readable outputs keep their documented contracts (man clock,
// OUTPUT FORMATS): `status` and `history --format json` validate against
// packaging/schema/*.schema.json with a real JSON Schema validator (Debian's
// python3-jsonschema), and `status --format prometheus` passes a real
// Prometheus parser and linter (`promtool check metrics`). The outputs come
// from real holders, waiters and every kind of history event.
#include <algorithm>
#include <regex>
#include <set>
#include <string>

#include <doctest/doctest.h>

#include "common_helpers.hpp"
#include "harness.hpp"

using namespace clk::test;

namespace {

// Debian's interpreter, not a pyenv or venv one on PATH: only it sees
// python3-jsonschema (packaging/install-deps.sh).
std::string python() {
  return getenv_or("CLOCK_TEST_PYTHON", "/usr/bin/python3");
}
std::string schema(const std::string& name) {
  return std::string(CLOCK_TEST_SCHEMA_DIR) + "/" + name + ".schema.json";
}

// Runs tests/helpers/validate_json.py on `document` (saved as FILE in the
// test directory); the result's stdout lists each violation.
Result validate(const TestEnv& env, const std::string& schema_name, const std::string& document,
                const std::string& file) {
  write_file(env.path(file), document);
  Command command =
      env.command({python(), std::string(CLOCK_TEST_HELPERS_DIR) + "/validate_json.py",
                   schema(schema_name), env.path(file).string()});
  return run(command, env.path("output"));
}

// Starts `clock acquire -r RESOURCE` as a new owner and waits until status
// lists it as the `expected`-th waiter overall, so the queue order is known.
std::unique_ptr<Process> queue_waiter(const TestEnv& env, const std::string& resource,
                                      const std::string& owner, std::size_t expected,
                                      const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"acquire", "-r", resource, "--owner", owner};
  args.insert(args.end(), extra.begin(), extra.end());
  auto waiter = env.spawn(env.clock_command(args));
  bool queued = await([&] { return env.status()["waiters"].size() >= expected; }, 30s);
  REQUIRE_MESSAGE(queued, "the waiter for " << resource << " never showed in status");
  return waiter;
}

// Holders of every kind (exclusive, shared, semaphore, no expiry, another
// namespace, an expired one left for --all) and three queued waiters.
struct Crowd {
  std::vector<std::unique_ptr<Process>> waiters;
  std::vector<std::string> waiter_owners;
};

Crowd fill_status(const TestEnv& env) {
  Crowd crowd;
  env.acquire({"-r", "old", "--ttl", "1s"});
  env.acquire({"-r", "ldap.import", "--ttl", "60s"});
  env.acquire({"-r", "reports", "-s"});
  env.acquire({"-r", "reports", "-s"});
  env.acquire({"-r", "pool", "--slots", "2"});
  env.acquire({"-r", "forever", "--ttl", "0"});
  env.acquire({"--namespace", "dc-eu1", "-r", "ldap.import"});
  for (std::size_t i = 0; i < 2; ++i) {
    crowd.waiter_owners.push_back(random_owner());
    crowd.waiters.push_back(queue_waiter(env, "ldap.import", crowd.waiter_owners.back(), i + 1));
  }
  crowd.waiter_owners.push_back(random_owner());
  crowd.waiters.push_back(queue_waiter(env, "reports", crowd.waiter_owners.back(), 3));
  bool expired = await([&] { return env.holders_of("old").empty(); }, 30s, 100ms);
  REQUIRE_MESSAGE(expired, "the 1s lease on 'old' did not expire");
  return crowd;
}

}  // namespace

TEST_SUITE("output contracts") {
  TEST_CASE("status --format json keeps to packaging/schema/status.schema.json") {
    TestEnv env;
    Crowd crowd = fill_status(env);

    Result all = env.clock({"status", "--all", "--format", "json"});
    REQUIRE_EXIT(all, 0);
    Result checked = validate(env, "status", all.out, "status-all.json");
    INFO("validator: " << checked.out << checked.err);
    CHECK_EXIT(checked, 0);

    // The document is the interesting one: every kind of holder and waiter.
    nlohmann::json status = nlohmann::json::parse(all.out);
    INFO(status.dump(2));
    CHECK(status["holders"].size() == 7);
    REQUIRE(status["waiters"].size() == 3);
    std::set<std::string> modes;
    int expired = 0, no_expiry = 0, namespaced = 0;
    for (const auto& holder : status["holders"]) {
      modes.insert(holder["mode"].get<std::string>() + "/" + holder["slots"].dump());
      expired += holder["expired"].get<bool>() ? 1 : 0;
      no_expiry += holder["expires_at"].is_null() ? 1 : 0;
      namespaced += holder["namespace"] == "dc-eu1" ? 1 : 0;
    }
    CHECK(modes == std::set<std::string>{"exclusive/0", "shared/0", "exclusive/2"});
    CHECK(expired == 1);
    CHECK(no_expiry == 1);
    CHECK(namespaced == 1);
    // Queue order, and each waiter's place in line for its own resource.
    for (std::size_t i = 0; i < 3; ++i)
      CHECK(status["waiters"][i]["owner"] == id_of(crowd.waiter_owners[i]));
    CHECK(status["waiters"][0]["place"] == 1);
    CHECK(status["waiters"][1]["place"] == 2);
    CHECK(status["waiters"][2]["place"] == 1);
    CHECK(status["waiters"][0]["position"] < status["waiters"][1]["position"]);

    // Without --all, and with nothing held at all, the output is valid too.
    Result live = env.clock({"status", "--format", "json"});
    CHECK_EXIT(validate(env, "status", live.out, "status-live.json"), 0);
    Result none = env.clock({"status", "nothing.here", "--format", "json"});
    CHECK_EXIT(none, 1);
    CHECK_EXIT(validate(env, "status", none.out, "status-none.json"), 0);
  }

  TEST_CASE("the status schema rejects what the contract forbids") {
    // A validator that accepts anything would make the test above worthless.
    TestEnv env;
    env.acquire({"-r", "x"});
    nlohmann::json status = env.status();
    auto broken = [&](const std::function<void(nlohmann::json&)>& change, const std::string& file) {
      nlohmann::json copy = status;
      change(copy);
      return validate(env, "status", copy.dump(), file);
    };
    CHECK_EXIT(broken([](auto& j) { j["holders"][0].erase("token"); }, "no-token.json"), 1);
    CHECK_EXIT(broken([](auto& j) { j["holders"][0]["mode"] = "sometimes"; }, "mode.json"), 1);
    CHECK_EXIT(broken([](auto& j) { j["holders"][0]["resource"] = "a..b"; }, "name.json"), 1);
    CHECK_EXIT(broken([](auto& j) { j["now"] = "yesterday"; }, "now.json"), 1);
    CHECK_EXIT(broken([](auto& j) { j["holders"][0]["undocumented"] = 1; }, "extra.json"), 1);
  }

  TEST_CASE("history --format json keeps to packaging/schema/history.schema.json") {
    TestEnv env;
    // acquired and released
    Acquired a = env.acquire({"-r", "a"});
    CHECK_EXIT(env.clock({"release", "-r", "a", "--owner", a.credential}), 0);
    // forced, with who forced it
    env.acquire({"-r", "b"});
    CHECK_EXIT(env.clock({"release", "-r", "b", "--force"}), 0);
    // expired: a lapsed lease removed by the next acquirer; lost: a renewal
    // that finds its lease lapsed
    env.acquire({"-r", "c", "--ttl", "1s"});
    Acquired d = env.acquire({"-r", "d", "--ttl", "1s"});
    REQUIRE(await([&] { return env.holders_of("c").empty() && env.holders_of("d").empty(); }, 30s,
                  100ms));
    Acquired c = env.acquire({"-n", "-r", "c"});
    CHECK_EXIT(env.clock({"renew", "-r", "d", "--owner", d.credential}), 77);
    // refused: a release by the owner id without its secret
    CHECK_EXIT(env.clock({"release", "-r", "c", "--owner", c.owner}), 77);
    // runs that did not happen: skipped (-n) and timed_out (-w) behind c's
    // holder, killed at the runtime limit
    CHECK_EXIT(env.clock({"run", "-n", "-E", "0", "-r", "c", "--", "true"}), 0);
    CHECK_EXIT(env.clock({"run", "-w", "200ms", "-r", "c", "--", "true"}), 75);
    CHECK_EXIT(env.clock({"run", "--max-runtime", "200ms", "-r", "k", "--", "sleep", "30"}), 124);
    // skipped under --once-per, naming the run that did the period (done_by);
    // the first run declares the period (period_changed)
    CHECK_EXIT(env.clock({"run", "--once-per", "1h", "-r", "p", "--", "true"}), 0);
    CHECK_EXIT(env.clock({"run", "--once-per", "1h", "-r", "p", "--", "true"}), 0);
    // released by clock run with how its command ended: an exit code, a signal
    CHECK_EXIT(env.clock({"run", "-r", "e", "--", "sh", "-c", "exit 3"}), 3);
    CHECK_EXIT(env.clock({"run", "-r", "s", "--", "sh", "-c", "kill -TERM $$"}), 143);

    Result history = env.clock({"history", "--format", "json"});
    REQUIRE_EXIT(history, 0);
    Result checked = validate(env, "history", history.out, "history.json");
    INFO("validator: " << checked.out << checked.err);
    CHECK_EXIT(checked, 0);

    nlohmann::json events = nlohmann::json::parse(history.out)["events"];
    INFO(events.dump(2));
    std::set<std::string> kinds;
    for (const auto& event : events)
      kinds.insert(event["event"].get<std::string>());
    CHECK(kinds == std::set<std::string>{"acquired", "released", "forced", "expired", "lost",
                                         "skipped", "timed_out", "killed", "refused",
                                         "period_changed"});
    for (const auto& event : events) {
      if (event["event"] == "forced" || event["event"] == "refused")
        CHECK(event["by"].get<std::string>().find('@') != std::string::npos);
    }
    CHECK(std::count_if(events.begin(), events.end(), [](const nlohmann::json& event) {
            return event["event"] == "skipped" && event["done_by"].is_object();
          }) == 1);
    CHECK(std::count_if(events.begin(), events.end(),
                        [](const nlohmann::json& event) { return event["exit_code"] == 3; }) == 1);
    CHECK(std::count_if(events.begin(), events.end(), [](const nlohmann::json& event) {
            return event["signal"] == "SIGTERM";
          }) >= 1);

    Result limited = env.clock({"history", "a", "--limit", "1", "--format", "json"});
    CHECK_EXIT(validate(env, "history", limited.out, "history-limited.json"), 0);
    Result empty = env.clock({"history", "nothing.here", "--format", "json"});
    CHECK_EXIT(validate(env, "history", empty.out, "history-empty.json"), 0);
  }

  TEST_CASE("status --format prometheus passes promtool check metrics") {
    TestEnv env;
    Crowd crowd = fill_status(env);
    // Ended runs: the run results' samples (succeeded, failed, last exit).
    CHECK_EXIT(env.clock({"run", "-r", "done.ok", "--", "true"}), 0);
    CHECK_EXIT(env.clock({"run", "-r", "done.bad", "--", "sh", "-c", "exit 3"}), 3);
    Result metrics = env.clock({"status", "--format", "prometheus"});
    REQUIRE_EXIT(metrics, 0);
    Command check = env.command({promtool(), "check", "metrics"});
    check.stdin_text = metrics.out;
    Result checked = run(check, env.path("output"));
    INFO("metrics:\n" << metrics.out);
    CHECK_EXIT(checked, 0);
    // promtool prints its lint findings (naming, units, HELP) even on exit 0.
    CHECK(checked.out.empty());
    CHECK(checked.err.empty());

    auto sample = [&](const std::string& name, const std::string& ns, const std::string& resource) {
      std::regex line("(^|\n)" + name + "\\{namespace=\"" + ns + "\",resource=\"" + resource +
                      "\"\\} ([-0-9.e+]+)\n");
      std::smatch match;
      return std::regex_search(metrics.out, match, line) ? std::optional(std::stod(match[2]))
                                                         : std::nullopt;
    };
    CHECK(sample("clock_lock_holders", "", "ldap\\.import") == 1.0);
    CHECK(sample("clock_lock_holders", "dc-eu1", "ldap\\.import") == 1.0);
    CHECK(sample("clock_lock_holders", "", "reports") == 2.0);
    CHECK(sample("clock_waiters", "", "ldap\\.import") == 2.0);
    CHECK(sample("clock_waiters", "", "reports") == 1.0);
    CHECK(sample("clock_lock_holders", "", "old") == std::nullopt);  // expired: not held
    auto left = sample("clock_lease_expires_in_seconds", "", "ldap\\.import");
    REQUIRE(left.has_value());
    CHECK(*left > 0);
    CHECK(*left <= 60);
    CHECK(sample("clock_lease_expires_in_seconds", "", "forever") == std::nullopt);
    CHECK(sample("clock_lease_age_seconds", "", "forever").value_or(-1) >= 0);
    // Runs by outcome: a counter family, one sample per resource and outcome.
    CHECK(metrics.out.find("\n# TYPE clock_runs_total counter\n") != std::string::npos);
    auto runs = runs_total(metrics.out);
    CHECK(runs["/reports/acquired"] == 2);
    CHECK(runs["dc-eu1/ldap.import/acquired"] == 1);
    CHECK(runs["/done.ok/succeeded"] == 1);
    CHECK(runs["/done.bad/failed"] == 1);
    CHECK(sample("clock_last_exit_status", "", "done\\.bad") == 3.0);
    CHECK(sample("clock_last_run_duration_seconds", "", "done\\.ok").value_or(-1) >= 0);

    // Nothing held: still a valid exposition, and exit 0 (a textfile cron
    // line `… > f.tmp && mv f.tmp f` must keep updating the file).
    Result none = env.clock({"status", "nothing.here", "--format", "prometheus"});
    CHECK_EXIT(none, 0);
    check.stdin_text = none.out;
    CHECK_EXIT(run(check, env.path("output")), 0);
  }
}
