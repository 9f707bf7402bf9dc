// The scenario of an intruder who sees everything clock shows about a held
// lock and tries to renew or release it without the owner's secret: run
// against SQLite (another user on the same file) and PostgreSQL (another
// user on another host, logged in as clock_app) by test_owner_secret.cpp and
// test_least_privilege.cpp.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "harness.hpp"

namespace clk::test {

struct Intruder {
  int uid = 61003;                         // no passwd entry: clock names it by number
  std::string host;                        // empty: this host; else a UTS namespace with this name
  std::map<std::string, std::string> env;  // e.g. the database URL of its role
};

// `clock ARGS…` as the intruder (setpriv, and unshare --uts for another
// host): needs root.
Result clock_as(const TestEnv& env, const Intruder& intruder, const std::vector<std::string>& args);

// Holds deploy.web with `clock run` (as root, with `holder_env`), lets the
// intruder read status and history and try every renew and release it can
// make of what it saw (exit 77, each recorded as refused with who asked),
// then lets the holder finish, which must exit 0. `has_force`: the intruder
// may release --force (SQLite: whoever can write the file) or not (78).
void intruder_cannot_take_the_lease(const TestEnv& env,
                                    const std::map<std::string, std::string>& holder_env,
                                    const Intruder& intruder, int force_status);

}  // namespace clk::test
