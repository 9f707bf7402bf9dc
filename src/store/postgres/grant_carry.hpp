// How a least-privilege role (sql/postgres/roles.sql) keeps its grants when
// a set of functions is applied over an older one, without roles.sql being
// run again: the shapes of the tables schema.cpp (this release's set) and
// release_1_0.cpp (release 1.0's, frozen) keep.
#pragma once

#include <string_view>
#include <vector>

namespace clk::store::postgres {

// A function whose signature changed: every role that could execute the old
// one may execute its successors. Successors are current signatures: an
// older schema may skip a step.
struct ReplacedFunction {
  std::string_view old_signature;
  std::vector<std::string_view> successors;
};

// A new function that every role that may execute an existing one may
// execute too; the existing function stays as it is.
struct GrantedBeside {
  std::string_view existing;
  std::string_view added;
};

}  // namespace clk::store::postgres
