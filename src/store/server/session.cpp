// The typed arguments of session.hpp.
#include "store/server/session.hpp"

namespace clk::store::server {

Arg text(std::string value) {
  return {ArgType::text, std::move(value)};
}

Arg text(const std::optional<std::string>& value) {
  if (!value)
    return {ArgType::text, std::monostate{}};
  return {ArgType::text, *value};
}

Arg integer(std::int64_t value) {
  return {ArgType::integer, value};
}

Arg integer(std::optional<std::int64_t> value) {
  if (!value)
    return {ArgType::integer, std::monostate{}};
  return {ArgType::integer, *value};
}

Arg bigint(std::int64_t value) {
  return {ArgType::bigint, value};
}

Arg bigint(std::optional<std::int64_t> value) {
  if (!value)
    return {ArgType::bigint, std::monostate{}};
  return {ArgType::bigint, *value};
}

Arg int4(std::optional<std::int64_t> value) {
  if (!value)
    return {ArgType::int4, std::monostate{}};
  return {ArgType::int4, *value};
}

Arg uuid(const lock::OwnerId& owner) {
  return {ArgType::uuid, owner.str()};
}

Arg boolean(bool value) {
  return {ArgType::boolean, value};
}

Arg names(const std::vector<lock::Resource>& resources) {
  std::vector<std::string> out;
  out.reserve(resources.size());
  for (const auto& resource : resources)
    out.push_back(resource.str());
  return {ArgType::names, std::move(out)};
}

Arg numbers(const std::vector<std::int64_t>& values) {
  return {ArgType::numbers, values};
}

Arg json(const std::optional<std::string>& value) {
  if (!value)
    return {ArgType::json, std::monostate{}};
  return {ArgType::json, *value};
}

Arg instant(lock::Instant value) {
  if (value == lock::Instant{})
    return {ArgType::instant, std::monostate{}};
  return {
      ArgType::instant,
      std::int64_t{
          std::chrono::duration_cast<std::chrono::microseconds>(value.time_since_epoch()).count()}};
}

}  // namespace clk::store::server
