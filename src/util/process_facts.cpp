// Host name, address, user, command line and random ids.
#include "util/process_facts.hpp"

#include <arpa/inet.h>
#include <array>
#include <cstdint>
#include <cstdio>
#include <ifaddrs.h>
#include <memory>
#include <net/if.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/proc_stat.hpp"

namespace clk::util {

std::string host_name() {
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) != 0)
    return "unknown";
  return name.data();
}

namespace {

// The source address of the route to the IPv4 internet, "" when there is no
// such route. A UDP socket's connect() only looks the route up (nothing is
// sent); the address is TEST-NET-2 (RFC 5737), which no host routes apart.
// Four system calls, where getifaddrs() opens a netlink socket and has the
// kernel dump every link and every address.
std::string default_route_ip() {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return "";
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(9);
  to.sin_addr.s_addr = htonl(0xc6336401);  // 198.51.100.1
  sockaddr_in from{};
  socklen_t size = sizeof from;
  bool found = ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0 &&
               ::getsockname(fd, reinterpret_cast<sockaddr*>(&from), &size) == 0 &&
               from.sin_family == AF_INET && from.sin_addr.s_addr != htonl(INADDR_ANY) &&
               (ntohl(from.sin_addr.s_addr) >> 24) != 127;
  ::close(fd);
  std::array<char, INET_ADDRSTRLEN> text{};
  if (!found || !inet_ntop(AF_INET, &from.sin_addr, text.data(), text.size()))
    return "";
  return text.data();
}

// The first IPv4 address of an interface that is up and not loopback, else
// its first IPv6 address that is not link-local, else "".
std::string first_interface_ip() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0)
    return "";
  std::unique_ptr<ifaddrs, decltype(&freeifaddrs)> guard(list, freeifaddrs);
  std::string v6;
  for (auto* entry = list; entry; entry = entry->ifa_next) {
    if (!entry->ifa_addr || (entry->ifa_flags & IFF_LOOPBACK) || !(entry->ifa_flags & IFF_UP)) {
      continue;
    }
    std::array<char, INET6_ADDRSTRLEN> text{};
    if (entry->ifa_addr->sa_family == AF_INET) {
      auto* address = reinterpret_cast<sockaddr_in*>(entry->ifa_addr);
      inet_ntop(AF_INET, &address->sin_addr, text.data(), text.size());
      return text.data();
    }
    if (entry->ifa_addr->sa_family == AF_INET6 && v6.empty()) {
      auto* address = reinterpret_cast<sockaddr_in6*>(entry->ifa_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&address->sin6_addr))
        continue;
      inet_ntop(AF_INET6, &address->sin6_addr, text.data(), text.size());
      v6 = text.data();
    }
  }
  return v6;
}

}  // namespace

std::string primary_ip() {
  if (auto routed = default_route_ip(); !routed.empty())
    return routed;
  return first_interface_ip();
}

// Looked up once per process: each getpwuid() goes through nsswitch (the
// nscd socket, nsswitch.conf, /etc/passwd), and a run asks for the owner's
// facts and its caller's.
std::string user_name() {
  static const std::string name = [] {
    if (auto* entry = getpwuid(geteuid()))
      return std::string(entry->pw_name);
    return std::to_string(geteuid());
  }();
  return name;
}

namespace {

// The length of the valid UTF-8 sequence at `at`, 0 if the bytes there are not one.
std::size_t utf8_length(std::string_view text, std::size_t at) {
  auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(at);
  std::size_t length = lead < 0x80           ? 1
                       : (lead >> 5) == 0x6  ? 2
                       : (lead >> 4) == 0xe  ? 3
                       : (lead >> 3) == 0x1e ? 4
                                             : 0;
  if (length == 0 || at + length > text.size())
    return 0;
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(at + i) >> 6) != 0x2)
      return 0;
  }
  std::uint32_t point = length == 1 ? lead : lead & (0x7f >> length);
  for (std::size_t i = 1; i < length; ++i)
    point = (point << 6) | (byte(at + i) & 0x3f);
  static constexpr std::uint32_t k_min[] = {0, 0, 0x80, 0x800, 0x10000};
  if (point < k_min[length] || point > 0x10ffff || (point >= 0xd800 && point <= 0xdfff))
    return 0;  // overlong, beyond Unicode, or a surrogate
  return length;
}

// Bash's $'…' quoting, with \xNN for each byte that is not valid UTF-8: the
// stored command line is then valid UTF-8 (PostgreSQL's text and JSON need
// it) and still says exactly which bytes the argument held.
std::string ansi_c_quoted(std::string_view arg) {
  std::string out = "$'";
  for (std::size_t i = 0; i < arg.size();) {
    std::size_t length = utf8_length(arg, i);
    if (length == 0) {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned char>(arg[i]));
      out += escaped;
      ++i;
      continue;
    }
    if (arg[i] == '\\' || arg[i] == '\'')
      out += '\\';
    out.append(arg.substr(i, length));
    i += length;
  }
  return out + "'";
}

}  // namespace

bool is_valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    std::size_t length = utf8_length(text, i);
    if (length == 0)
      return false;
    i += length;
  }
  return true;
}

std::string command_line(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& arg : args) {
    if (!out.empty())
      out += ' ';
    bool plain = !arg.empty() && arg.find_first_not_of(
                                     "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                     "0123456789_-./=:,+@%") == std::string::npos;
    if (plain) {
      out += arg;
      continue;
    }
    if (!is_valid_utf8(arg)) {
      out += ansi_c_quoted(arg);
      continue;
    }
    out += '\'';
    for (char c : arg)
      out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

namespace {

// 16 bytes from the kernel's random source (getrandom blocks only until the
// pool is first initialised).
std::array<unsigned char, 16> random_bytes() {
  std::array<unsigned char, 16> bytes{};
  std::size_t filled = 0;
  while (filled < bytes.size()) {
    auto got = getrandom(bytes.data() + filled, bytes.size() - filled, 0);
    if (got > 0)
      filled += static_cast<std::size_t>(got);
  }
  return bytes;
}

}  // namespace

std::string random_uuid() {
  auto bytes = random_bytes();
  bytes[6] = static_cast<unsigned char>((bytes[6] & 0x0f) | 0x40);  // version 4
  bytes[8] = static_cast<unsigned char>((bytes[8] & 0x3f) | 0x80);  // RFC 4122 variant
  std::array<char, 37> text{};
  std::snprintf(text.data(), text.size(),
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", bytes[0],
                bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
                bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]);
  return text.data();
}

std::string random_secret() {
  auto bytes = random_bytes();
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char byte : bytes) {
    out += k_hex[byte >> 4];
    out += k_hex[byte & 0x0f];
  }
  return out;
}

std::vector<std::int64_t> process_lineage() {
  std::vector<std::int64_t> lineage;
  for (pid_t pid = getpid(); pid > 1 && lineage.size() < 64;) {
    lineage.push_back(pid);
    auto facts = read_proc_stat(std::to_string(pid));
    if (!facts)
      break;
    pid = facts->parent;
  }
  return lineage;
}

}  // namespace clk::util
