// Facts about this process and host that identify an owner to an operator.
#pragma once

#include <string>
#include <vector>

namespace clk::util {

std::string host_name();
// The first non-loopback IPv4 (else IPv6) address of this host, "" if none.
std::string primary_ip();
std::string user_name();
// Joins arguments into one line, quoting those that need it for a shell.
std::string command_line(const std::vector<std::string>& args);
// A random version-4 UUID, from the kernel's random source.
std::string random_uuid();

}  // namespace clk::util
