// mysql:// and mariadb:// URLs (store/mariadb_url): what reaches Connector/C,
// what is left to the option files, and that no message shows the password.
#include <string>

#include <doctest/doctest.h>

#include "error.hpp"
#include "store/database_url.hpp"
#include "store/mariadb_url.hpp"

using clk::store::parse_mariadb_url;

namespace {

// The message of the config error a URL raises ("" if it parses).
std::string refusal(const std::string& url) {
  try {
    parse_mariadb_url(url);
  } catch (const clk::Error& error) {
    CHECK(error.code() == clk::ExitCode::config);
    return error.what();
  }
  return "";
}

}  // namespace

TEST_SUITE("store::mariadb_url") {
  TEST_CASE("user, password, host, port and database reach the connect call") {
    auto url = parse_mariadb_url("mysql://clock:s3cret@db.example:3307/locks");
    CHECK(url.user == "clock");
    CHECK(url.password == "s3cret");
    CHECK(url.hosts.front().name == "db.example");
    CHECK(url.hosts.front().port == 3307);
    CHECK(url.database == "locks");
    CHECK(!url.socket);
    CHECK(url.option_group == "clock");
  }

  TEST_CASE("mariadb:// is the same as mysql://") {
    auto url = parse_mariadb_url("mariadb://u@h/d");
    CHECK(url.user == "u");
    CHECK(!url.password);
    CHECK(url.hosts.front().name == "h");
    CHECK(url.hosts.front().port == 0);
    CHECK(url.database == "d");
  }

  TEST_CASE("what the URL leaves out is left to the option files") {
    auto url = parse_mariadb_url("mysql:///clock");
    CHECK(!url.user);
    CHECK(!url.password);
    CHECK(!url.hosts.front().name);
    CHECK(url.hosts.front().port == 0);
    CHECK(url.database == "clock");
  }

  TEST_CASE("user, password and values are percent-decoded; an '@' or '/' may stay unencoded") {
    auto url = parse_mariadb_url("mysql://a%40b:p%2Fw%25@localhost/d?socket=%2Ftmp%2Fmy.sock");
    CHECK(url.user == "a@b");
    CHECK(url.password == "p/w%");
    CHECK(url.socket == "/tmp/my.sock");
    auto raw = parse_mariadb_url("mysql://u:p@ss/w@h/d");
    CHECK(raw.password == "p@ss/w");
    CHECK(raw.hosts.front().name == "h");
  }

  TEST_CASE("a unix socket with an empty host or localhost") {
    auto url = parse_mariadb_url("mariadb://root@localhost/clock?socket=/run/mysqld/mysqld.sock");
    CHECK(url.hosts.front().name == "localhost");
    CHECK(url.socket == "/run/mysqld/mysqld.sock");
    CHECK(parse_mariadb_url("mysql:///clock?socket=/s").socket == "/s");
    CHECK(refusal("mysql://db.example/clock?socket=/s").find("socket= needs") != std::string::npos);
  }

  TEST_CASE("an IPv6 host in brackets") {
    auto url = parse_mariadb_url("mysql://u@[::1]:3306/d");
    CHECK(url.hosts.front().name == "::1");
    CHECK(url.hosts.front().port == 3306);
    CHECK(parse_mariadb_url("mysql://u@[fe80::1]/d").hosts.front().port == 0);
  }

  TEST_CASE("a list of hosts: the nodes of a Galera cluster, in the URL's order") {
    auto url = parse_mariadb_url("mariadb://u:p@n1:3306,n2,[::1]:3308/locks");
    REQUIRE(url.hosts.size() == 3);
    CHECK(url.hosts[0].name == "n1");
    CHECK(url.hosts[0].port == 3306);
    CHECK(url.hosts[1].name == "n2");
    CHECK(url.hosts[1].port == 0);
    CHECK(url.hosts[2].name == "::1");
    CHECK(url.hosts[2].port == 3308);
    CHECK(url.hosts[2].label() == "[::1]:3308");
    CHECK(url.hosts[1].label() == "n2");
    CHECK(url.password == "p");
    CHECK(url.database == "locks");
  }

  TEST_CASE("a list of hosts with an empty entry, or with a socket, is refused") {
    CHECK(refusal("mysql://u@n1,,n2/d").find("empty entry") != std::string::npos);
    CHECK(refusal("mysql://u@n1,/d").find("empty entry") != std::string::npos);
    CHECK(refusal("mysql://u@localhost,n2/d?socket=/s").find("not a list of hosts") !=
          std::string::npos);
    CHECK(refusal("mysql://u@n1:0,n2/d").find("the port '0'") != std::string::npos);
  }

  TEST_CASE("TLS options pass through, with '_' or '-'") {
    auto url = parse_mariadb_url(
        "mysql://u@h/d?ssl=true&ssl-ca=/ca.pem&ssl_cert=/c.pem&ssl-key=/k.pem&ssl-capath=/cas"
        "&ssl-cipher=ECDHE&ssl-crl=/crl&ssl-crlpath=/crls&tls-version=TLSv1.3"
        "&ssl-verify-server-cert=false");
    CHECK(url.tls.enforce == true);
    CHECK(url.tls.verify_server_cert == false);
    CHECK(url.tls.ca == "/ca.pem");
    CHECK(url.tls.cert == "/c.pem");
    CHECK(url.tls.key == "/k.pem");
    CHECK(url.tls.capath == "/cas");
    CHECK(url.tls.cipher == "ECDHE");
    CHECK(url.tls.crl == "/crl");
    CHECK(url.tls.crlpath == "/crls");
    CHECK(url.tls.version == "TLSv1.3");
    CHECK(!parse_mariadb_url("mysql://u@h/d").tls.enforce);
  }

  TEST_CASE("the option-file group and file") {
    auto url = parse_mariadb_url("mysql:///d?group=clock_prod&defaults-file=/etc/clock/my.cnf");
    CHECK(url.option_group == "clock_prod");
    CHECK(url.defaults_file == "/etc/clock/my.cnf");
    CHECK(refusal("mysql:///d?group=").find("names no option-file group") != std::string::npos);
  }

  TEST_CASE("a password may come as ?password=") {
    CHECK(parse_mariadb_url("mysql://u@h/d?password=x%26y").password == "x&y");
    CHECK(refusal("mysql://u:a@h/d?password=b").find("given twice") != std::string::npos);
  }

  TEST_CASE("bad URLs are configuration errors that say what is wrong") {
    CHECK(refusal("mysql://u@h/").find("names no database") != std::string::npos);
    CHECK(refusal("mysql://u@h").find("names no database") != std::string::npos);
    CHECK(refusal("mysql://u@h:0/d").find("port") != std::string::npos);
    CHECK(refusal("mysql://u@h:70000/d").find("port") != std::string::npos);
    CHECK(refusal("mysql://u@h:33x/d").find("port") != std::string::npos);
    CHECK(refusal("mysql://u@h:/d").find("port") != std::string::npos);
    CHECK(refusal("mysql://u@h/d`x").find("database name") != std::string::npos);
    CHECK(refusal("mysql://u@h/d?sslmode=require").find("unknown option 'sslmode'") !=
          std::string::npos);
    CHECK(refusal("mysql://u@h/d?ssl=maybe").find("not true or false") != std::string::npos);
    CHECK(refusal("mysql://u@h/d?socket").find("has no value") != std::string::npos);
    CHECK(refusal("mysql://u%4@h/d").find("two hex digits") != std::string::npos);
    CHECK(refusal("mysql://u%00@h/d").find("NUL") != std::string::npos);
    CHECK(refusal("mysql://u@[::1/d").find("']'") != std::string::npos);
  }

  TEST_CASE("no refusal shows the password") {
    for (std::string url :
         {"mysql://u:s3cret@h:0/d", "mysql://u:s3cret@h/", "mysql://u:s3cret@h/d?bad=1",
          "mysql://u@h/d?password=s3cret&x=1", "mariadb://u:s3cret@h/d?ssl=maybe"}) {
      std::string message = refusal(url);
      CHECK(!message.empty());
      CHECK(message.find("s3cret") == std::string::npos);
      CHECK(clk::store::mask_password(url).find("s3cret") == std::string::npos);
    }
  }

  TEST_CASE("mysql:// and mariadb:// URLs name the MariaDB backend") {
    using clk::store::Backend;
    CHECK(clk::store::backend_of("mysql://u@h/d") == Backend::mariadb);
    CHECK(clk::store::backend_of("mariadb://u@h/d") == Backend::mariadb);
    CHECK(clk::store::backend_of("postgresql://u@h/d") == Backend::postgres);
    CHECK(clk::store::backend_name(Backend::mariadb) == std::string("MariaDB"));
  }
}
