// Facts about this process and host that identify an owner to an operator.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace clk::util {

std::string host_name();
// The address this host reaches others from: the source address of its IPv4
// default route; without one, the first non-loopback IPv4 (else IPv6)
// address of its interfaces; "" if none.
std::string primary_ip();
std::string user_name();
// Joins arguments into one line, quoting those that need it for a shell; an
// argument that is not valid UTF-8 is quoted as $'…' with \xNN for the
// invalid bytes, so the line is always valid UTF-8.
std::string command_line(const std::vector<std::string>& args);
// A random version-4 UUID, from the kernel's random source.
std::string random_uuid();
// 128 random bits as 32 hex digits, from the same source: an owner's secret.
std::string random_secret();
// This process's pid, its parent's, and so on up to (not including) init:
// whether a lease's pid is one of them says whether the caller runs inside
// the holder's process tree.
std::vector<std::int64_t> process_lineage();
// True if `text` is well-formed UTF-8 (no overlong forms, no surrogates).
bool is_valid_utf8(std::string_view text);

}  // namespace clk::util
