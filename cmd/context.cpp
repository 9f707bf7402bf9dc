// Shared helpers of the subcommands.
#include "cmd/context.hpp"

#include <cstdio>
#include <fstream>
#include <iterator>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "error.hpp"
#include "lock/limits.hpp"
#include "store/open_store.hpp"
#include "util/duration.hpp"
#include "util/http_url.hpp"
#include "util/owner_secret.hpp"
#include "util/password.hpp"
#include "util/process_facts.hpp"

namespace clk::cmd {

store::StoreOptions Context::store_options() const {
  return {.url = settings.database_url,
          .pg_schema = settings.pg_schema,
          .connect_timeout = settings.connect_timeout,
          .allow_network_filesystem = settings.allow_network_filesystem,
          .watch_lease = settings.watch_lease,
          .galera_max_skew = settings.galera_max_skew,
          .private_default = settings.database_is_default};
}

std::unique_ptr<store::Store> Context::open_store() const {
  return store::open_store(store_options());
}

lock::OwnerCredential Context::owner_or_new() const {
  if (!settings.owner)
    return {lock::OwnerId::parse(util::random_uuid()), util::random_secret()};
  auto credential = lock::OwnerCredential::parse(*settings.owner);
  if (credential.secret.empty()) {
    throw Error(ExitCode::usage,
                "--owner or CLOCK_OWNER names owner " + credential.id.str() +
                    " without its secret: acquiring as an owner needs ID.SECRET, as 'clock "
                    "acquire --format shell' exports it and 'clock run' passes it to its child; "
                    "unset both for a new owner");
  }
  return credential;
}

lock::OwnerCredential Context::required_owner(const std::string& command) const {
  if (!settings.owner) {
    throw Error(ExitCode::usage, "clock " + command +
                                     " needs the owner: set CLOCK_OWNER=ID.SECRET ('clock acquire "
                                     "--format shell' exports it), or pass --owner");
  }
  return lock::OwnerCredential::parse(*settings.owner);
}

// The same for the whole process (clock run asks twice: for the heartbeat's
// renewals and for the release), so its ancestors' /proc files are read once.
store::Caller this_caller() {
  static const store::Caller caller{lock::bounded(util::user_name(), lock::k_max_user_bytes),
                                    lock::bounded(util::host_name(), lock::k_max_host_bytes),
                                    getpid(), util::process_lineage()};
  return caller;
}

std::chrono::milliseconds duration_flag(const std::string& flag, const std::string& value) {
  if (auto parsed = util::parse_duration(value))
    return *parsed;
  throw Error(ExitCode::usage, "invalid duration '" + value + "' for " + flag +
                                   ": use 250ms, 90s, 5m, 2h, 1d, 1h30m or plain seconds");
}

std::chrono::milliseconds lease_ttl(const Context& context,
                                    const std::optional<std::string>& flag) {
  auto ttl = flag ? duration_flag("--ttl", *flag) : context.settings.ttl;
  const std::string shown = util::format_duration(ttl);
  if (ttl > lock::k_max_ttl) {
    const std::string cap = util::format_duration(lock::k_max_ttl);
    if (flag) {
      throw Error(ExitCode::usage, "--ttl " + *flag + " is longer than the maximum lease, " + cap +
                                       ": use a shorter TTL (clock run renews it), or --ttl 0 "
                                       "for a lease that never expires");
    }
    throw Error(ExitCode::config, context.settings.config_file.string() + ": lock.ttl: " + shown +
                                      " is longer than the maximum lease, " + cap +
                                      ": use a shorter TTL, or 0 for no expiry");
  }
  if (ttl.count() == 0) {
    spdlog::warn(
        "--ttl 0: the lease never expires; if this process dies, the lock stays held "
        "until 'clock release --force'");
  } else if (ttl > lock::k_long_ttl) {
    spdlog::warn(
        "--ttl {}: if this process dies, the lock stays held for up to {} unless "
        "'clock release --force'",
        shown, shown);
  }
  return ttl;
}

namespace {

lock::OwnerInfo base_info() {
  return {.host = lock::bounded(util::host_name(), lock::k_max_host_bytes),
          .ip = lock::bounded(util::primary_ip(), lock::k_max_ip_bytes),
          .pid = 0,
          .user = lock::bounded(util::user_name(), lock::k_max_user_bytes),
          .command = "",
          .started = std::chrono::system_clock::now(),
          .db_user = ""};  // the store's to fill in when it reads
}

// /proc/PID/cmdline holds the arguments separated by NULs.
std::vector<std::string> arguments_of(pid_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  std::string current;
  for (char c : raw) {
    if (c == '\0') {
      args.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty())
    args.push_back(current);
  return args;
}

// What status and history show of a command line: its passwords, owner
// secrets (a helper called as `step.sh "$CLOCK_OWNER"` holds one) and the
// secret parts of a nested clock run's --ping URL masked, the owner id and
// the ping URL's host kept.
std::string stored_command_line(const std::vector<std::string>& args) {
  return lock::bounded(util::mask_owner_secrets(
                           util::mask_passwords(util::mask_ping_urls(util::command_line(args)))),
                       lock::k_max_command_bytes);
}

}  // namespace

lock::OwnerInfo owner_info_for_run(const std::vector<std::string>& command) {
  auto info = base_info();
  info.pid = getpid();
  info.command = stored_command_line(command);
  return info;
}

lock::OwnerInfo owner_info_for_caller() {
  auto info = base_info();
  info.pid = getppid();
  info.command = stored_command_line(arguments_of(getppid()));
  return info;
}

output::Format format_flag(const std::string& value,
                           std::initializer_list<output::Format> allowed) {
  static const std::pair<const char*, output::Format> k_names[] = {
      {"text", output::Format::text},
      {"json", output::Format::json},
      {"shell", output::Format::shell},
      {"table", output::Format::table},
      {"prometheus", output::Format::prometheus},
      {"nagios", output::Format::nagios}};
  std::string choices;
  for (auto format : allowed) {
    for (const auto& [name, known] : k_names) {
      if (known != format)
        continue;
      if (value == name)
        return format;
      choices += (choices.empty() ? "" : ", ") + std::string(name);
    }
  }
  throw Error(ExitCode::usage, "invalid --format '" + value + "': use one of " + choices);
}

void print(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

}  // namespace clk::cmd
