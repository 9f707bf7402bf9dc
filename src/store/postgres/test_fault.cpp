// See test_fault.hpp. Without CLOCK_TEST_FAULTS this is a constant false.
#include "store/postgres/test_fault.hpp"

#ifdef CLOCK_TEST_FAULTS
#include <atomic>
#include <cstdlib>
#include <string>
#endif

namespace clk::store::postgres::test_fault {

#ifdef CLOCK_TEST_FAULTS
namespace {
bool once(std::string_view fault, std::string_view op, std::atomic<bool>& done) {
  const char* wanted = std::getenv("CLOCK_TEST_FAULT");
  if (!wanted || std::string_view(wanted) != std::string(fault) + ":" + std::string(op))
    return false;
  return !done.exchange(true);
}
}  // namespace

bool drop_reply(std::string_view op) {
  static std::atomic<bool> done{false};
  return once("drop-reply", op, done);
}

bool drop_request(std::string_view op) {
  static std::atomic<bool> done{false};
  return once("drop-request", op, done);
}
#else
bool drop_reply(std::string_view) {
  return false;
}

bool drop_request(std::string_view) {
  return false;
}
#endif

}  // namespace clk::store::postgres::test_fault
