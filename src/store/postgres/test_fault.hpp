// Test-only fault injection for the PostgreSQL store: lets an integration test
// lose the reply of an operation that has committed, which no external tool
// can time. Compiled in only with the CMake option CLOCK_TEST_FAULTS (on where
// the tests are built, never in the package); otherwise every check is false.
#pragma once

#include <string_view>

namespace clk::store::postgres::test_fault {

// True, once per process, when CLOCK_TEST_FAULT=drop-reply:OP names `op`
// (e.g. "drop-reply:acquire"): the caller then closes the connection and
// treats the reply as lost, as when the network fails right after COMMIT.
bool drop_reply(std::string_view op);

// True, once per process, when CLOCK_TEST_FAULT=drop-request:OP names `op`:
// the caller then closes the connection before sending the statement, which
// so never takes effect, though the caller cannot tell that from a lost reply.
bool drop_request(std::string_view op);

}  // namespace clk::store::postgres::test_fault
