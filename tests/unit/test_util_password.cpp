// Password masking (util/password): what libpq would take as a password is
// never shown, in URLs, keyword strings and command lines alike.
#include <string>

#include <doctest/doctest.h>

#include "util/password.hpp"

using clk::util::has_password;
using clk::util::mask_passwords;

TEST_SUITE("util::password") {
  TEST_CASE("the password of a URL's user info is masked") {
    CHECK(mask_passwords("postgresql://u:s3cret@db/x") == "postgresql://u:****@db/x");
    CHECK(mask_passwords("postgres://u:s3cret@db1:5432,db2/x?sslmode=require") ==
          "postgres://u:****@db1:5432,db2/x?sslmode=require");
    // An unencoded '@' or '/' in the password: masked up to the last '@'.
    CHECK(mask_passwords("postgresql://u:p@ss/w@db/x") == "postgresql://u:****@db/x");
    CHECK(mask_passwords("postgresql://u@db/x") == "postgresql://u@db/x");
    CHECK(mask_passwords("postgresql://u:@db/x") == "postgresql://u:@db/x");
    CHECK(!has_password("postgresql://db:5432/x"));
  }

  TEST_CASE("password= values are masked in every form libpq reads") {
    CHECK(mask_passwords("host=db password=s3cret dbname=x") == "host=db password=**** dbname=x");
    CHECK(mask_passwords("host=db password = 's3 c\\'ret' dbname=x") ==
          "host=db password = **** dbname=x");
    CHECK(mask_passwords("host=db password=s3\\ cret dbname=x") ==
          "host=db password=**** dbname=x");
    CHECK(mask_passwords("PASSWORD=x") == "PASSWORD=****");
    CHECK(mask_passwords("postgresql://db/x?user=u&password=s3cret&sslmode=require") ==
          "postgresql://db/x?user=u&password=****");
    CHECK(mask_passwords("password='unterminated") == "password=****");
    CHECK(!has_password("passfile=/x host=db"));
    CHECK(!has_password("password"));
  }

  TEST_CASE("passwords anywhere in a command line are masked") {
    CHECK(mask_passwords("psql postgresql://u:s3cret@db/x -c 'select 1'") ==
          "psql postgresql://u:****@db/x -c 'select 1'");
    CHECK(mask_passwords("env PGPASSWORD=s3cret psql") == "env PGPASSWORD=**** psql");
    CHECK(mask_passwords("a b c") == "a b c");
  }

  TEST_CASE("in a connection string, the words of a password typed with spaces are masked too") {
    using clk::util::Words;
    std::string typo = "host=db password=my secret words dbname=x";
    CHECK(mask_passwords(typo, Words::until_keyword) == "host=db password=**** dbname=x");
    CHECK(mask_passwords(typo) == "host=db password=**** secret words dbname=x");
    CHECK(mask_passwords("host=db password=s3cret dbname=x", Words::until_keyword) ==
          "host=db password=**** dbname=x");
  }

  TEST_CASE("masking is idempotent") {
    for (std::string text : {"postgresql://u:s@db", "password='x y' host=z", "plain"}) {
      CHECK(mask_passwords(mask_passwords(text)) == mask_passwords(text));
    }
  }
}
