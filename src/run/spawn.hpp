// Starting the command: fork (into the job's cgroup), join the guard's
// process group, die with clock, take the terminal if clock had it, exec
// with a PATH search. An exec failure comes back through a close-on-exec
// pipe, so 126 and 127 are told apart.
#pragma once

#include <map>
#include <signal.h>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace clk::run {

class SignalRelay;

// The command's argv and environment as exec wants them, built before fork
// so that the child allocates nothing.
class Command {
 public:
  // The environment is the current one plus `extra_env`, which wins.
  Command(const std::vector<std::string>& argv,
          const std::map<std::string, std::string>& extra_env);
  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;

  const char* file() const { return m_argv.front(); }
  char* const* argv() const { return m_argv.data(); }
  char* const* envp() const { return m_envp.data(); }

 private:
  std::vector<std::string> m_strings;
  std::vector<char*> m_argv;
  std::vector<char*> m_envp;
};

// Where the child is to run and what it restores before exec.
struct ChildSetup {
  pid_t process_group;            // the guard's group, which the child joins
  bool take_terminal;             // make that group the terminal's foreground
  const SignalRelay* relay;       // dispositions to reset
  const sigset_t* original_mask;  // the mask clock started with
  int cgroup_dir_fd = -1;         // the job's cgroup, where the child starts; -1: none
  int cgroup_procs_fd = -1;       // its cgroup.procs, joined first where clone3 is refused
};

struct Spawned {
  pid_t pid = -1;  // running the command; -1 if it could not be started
  int status = 0;  // when pid is -1: 126 or 127 (the child is already reaped)
};

// Forks and execs the command. Call from the thread that lives as long as
// the child (PR_SET_PDEATHSIG fires when the forking *thread* exits), with
// the relayed signals blocked. Logs one error line when exec fails.
Spawned spawn(const Command& command, const ChildSetup& setup);

// The status clock exits with for a child's wait status: its exit code, or
// 128+N if a signal N killed it.
int exit_status_of(int wait_status);

// 127 when the command was not found, 126 when it could not be executed.
int exec_failure_status(int error);

// "./x: command not found", "./x: cannot execute: Permission denied".
std::string exec_failure_message(std::string_view file, int error);

}  // namespace clk::run
