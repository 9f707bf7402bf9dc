// What to do when PostgreSQL asked for a password and none was sent
// (libpq's "fe_sendauth: no password supplied"): the password file, the line
// to add to it and the login, as libpq would look them up.
#pragma once

#include <string>

#include "store/postgres/conninfo.hpp"

namespace clk::store::postgres {

// "; no password was sent for login clock_admin: add the line
// 'db.example:5432:clock:clock_admin:PASSWORD' to ~/.pgpass (mode 0600)…".
// The user, database, host and port come from the URL or keyword string,
// else the PG* variables, else libpq's defaults.
std::string missing_password_hint(const std::string& url, const Getenv& getenv = nullptr);

}  // namespace clk::store::postgres
