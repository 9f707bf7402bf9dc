// See test_fault.hpp. Without CLOCK_TEST_FAULTS this is a constant false.
#include "store/postgres/test_fault.hpp"

#ifdef CLOCK_TEST_FAULTS
#include <atomic>
#include <cstdlib>
#include <string>
#endif

namespace clk::store::postgres::test_fault {

#ifdef CLOCK_TEST_FAULTS
bool drop_reply(std::string_view op) {
  static std::atomic<bool> done{false};
  const char* wanted = std::getenv("CLOCK_TEST_FAULT");
  if (!wanted || std::string_view(wanted) != "drop-reply:" + std::string(op))
    return false;
  return !done.exchange(true);
}
#else
bool drop_reply(std::string_view) {
  return false;
}
#endif

}  // namespace clk::store::postgres::test_fault
