// Files that hold a login's options or a check's secret are trusted as libpq
// trusts ~/.pgpass (docs/threat-model.md): a MariaDB option file that others
// may write is refused (78, naming it and `chmod go-w`), since its
// plugin-dir and default-auth choose code that runs inside clock; one that
// others may read and that holds a password is warned about; a config file
// with ping URLs that every user may read too. The option files are
// checked before Connector/C reads them, so a MariaDB URL that nothing
// answers (69) is enough: no server is needed, and every backend's suite
// runs these.
#include <filesystem>
#include <string>

#include <doctest/doctest.h>

#include "harness.hpp"

using namespace clk::test;

namespace {

// Nothing listens on port 1: the connection is refused at once (69).
const std::string k_unreachable = "mysql://clock@127.0.0.1:1/clock";

void set_mode(const fs::path& file, fs::perms mode) {
  fs::permissions(file, mode, fs::perm_options::replace);
}

}  // namespace

TEST_SUITE("option files") {
  TEST_CASE("a ~/.my.cnf that others may write is refused (78); one they may read warns") {
    TestEnv env;
    const fs::path home = env.path("home");
    fs::create_directories(home);
    const fs::path my_cnf = home / ".my.cnf";
    write_file(my_cnf, "[client]\npassword = s3cret-word\n[clock]\nuser = clock\n");
    const std::vector<std::string> status = {"--database", k_unreachable, "status"};

    set_mode(my_cnf, fs::perms(0666));
    Result writable = env.clock(status);
    CHECK_EXIT(writable, 78);
    CHECK(writable.err_lines().size() == 1);
    CHECK(writable.err.find(my_cnf.string()) != std::string::npos);
    CHECK(writable.err.find("chmod go-w " + my_cnf.string()) != std::string::npos);
    CHECK(writable.err.find("s3cret") == std::string::npos);

    set_mode(my_cnf, fs::perms(0620));
    CHECK_EXIT(env.clock(status), 78);

    set_mode(my_cnf, fs::perms(0644));
    Result readable = env.clock(status);
    CHECK_EXIT(readable, 69);
    CHECK(readable.err.find("the MariaDB option file " + my_cnf.string() + " holds a password") !=
          std::string::npos);
    CHECK(readable.err.find("chmod 600 " + my_cnf.string()) != std::string::npos);

    set_mode(my_cnf, fs::perms(0600));
    Result mine = env.clock(status);
    CHECK_EXIT(mine, 69);
    CHECK(mine.err.find(".my.cnf") == std::string::npos);

    // Readable without a password: nothing to hand out, nothing said.
    write_file(my_cnf, "[client]\nuser = clock\n");
    set_mode(my_cnf, fs::perms(0644));
    Result plain = env.clock(status);
    CHECK_EXIT(plain, 69);
    CHECK(plain.err.find(".my.cnf") == std::string::npos);
  }

  TEST_CASE("what an option file includes, and the URL's defaults-file, are held to the same") {
    TestEnv env;
    const fs::path home = env.path("home");
    fs::create_directories(home);
    const fs::path folder = env.path("my.cnf.d");
    fs::create_directories(folder);
    write_file(home / ".my.cnf", "[client]\n!includedir " + folder.string() + "\n");
    set_mode(home / ".my.cnf", fs::perms(0600));
    write_file(folder / "plugins.cnf", "[client]\nplugin-dir = /tmp\n");
    set_mode(folder / "plugins.cnf", fs::perms(0644));

    // A folder anyone may add a file to.
    set_mode(folder, fs::perms(0777));
    Result open_folder = env.clock({"--database", k_unreachable, "status"});
    CHECK_EXIT(open_folder, 78);
    CHECK(open_folder.err.find("chmod go-w " + folder.string()) != std::string::npos);
    set_mode(folder, fs::perms(0755));
    // A file in it that anyone may change.
    set_mode(folder / "plugins.cnf", fs::perms(0666));
    Result open_file = env.clock({"--database", k_unreachable, "status"});
    CHECK_EXIT(open_file, 78);
    CHECK(open_file.err.find("chmod go-w " + (folder / "plugins.cnf").string()) !=
          std::string::npos);
    set_mode(folder / "plugins.cnf", fs::perms(0644));
    CHECK_EXIT(env.clock({"--database", k_unreachable, "status"}), 69);

    // ?defaults-file= is read instead of the others, and checked the same.
    const fs::path named = env.path("named.cnf");
    write_file(named, "[clock]\nuser = clock\n");
    set_mode(named, fs::perms(0666));
    Result refused =
        env.clock({"--database", k_unreachable + "?defaults-file=" + named.string(), "status"});
    CHECK_EXIT(refused, 78);
    CHECK(refused.err.find("chmod go-w " + named.string()) != std::string::npos);
  }

  TEST_CASE("a config file with ping URLs that every user may read is warned about") {
    TestEnv env;
    const fs::path config = env.path("clock.toml");
    write_file(config, "[ping.urls]\n\"db.backup\" = \"http://127.0.0.1:9/ping/secret-uuid\"\n");
    set_mode(config, fs::perms(0644));
    Result shared = env.clock({"--config", config.string(), "status"});
    CHECK(shared.status <= 1);  // nothing held: 1
    CHECK(shared.err.find("the config file " + config.string() + " holds ping URLs") !=
          std::string::npos);
    CHECK(shared.err.find("chmod o-r " + config.string()) != std::string::npos);
    CHECK(shared.err.find("secret-uuid") == std::string::npos);

    set_mode(config, fs::perms(0640));
    Result grouped = env.clock({"--config", config.string(), "status"});
    CHECK(grouped.status <= 1);
    CHECK(grouped.err.find("ping URLs") == std::string::npos);
  }
}
