// fork/exec of the supervised command, and what an exec failure or a wait
// status becomes as clock's exit status.
#include "run/spawn.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <system_error>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "error.hpp"
#include "run/signals.hpp"
#include "run/terminal.hpp"
#include "run/vfork_into_cgroup.hpp"
#include "util/file_size_signal.hpp"

extern char** environ;

namespace clk::run {

namespace {

// What the child reports on the close-on-exec pipe before it gives up.
struct ChildFailure {
  int error;
};

[[gnu::no_sanitize_address, noreturn]] void report_and_exit(int fd, int error) {
  ChildFailure failure{error};
  [[maybe_unused]] auto ignored = write(fd, &failure, sizeof failure);
  _exit(exec_failure_status(error));
}

// Runs in the child between fork and exec: async-signal-safe calls only.
// `in_cgroup`: the child started in the job's cgroup already. It and the
// functions beside it that run in the child are not instrumented by
// AddressSanitizer: before a call that does not return, it clears the stack
// it knows (clock's), and on the child's own stack (vfork_into_cgroup.hpp)
// it would find itself elsewhere and warn on stderr.
[[gnu::no_sanitize_address, noreturn]] void become_command(const Command& command,
                                                           const ChildSetup& setup, pid_t parent,
                                                           int report_fd, bool in_cgroup) {
  // Into the job's cgroup first, so that everything it starts is there too.
  // A refusal leaves it where clock is: the subreaper still finds the job.
  if (!in_cgroup && setup.cgroup_procs_fd >= 0) [[maybe_unused]]
    auto ignored = write(setup.cgroup_procs_fd, "0", 1);
  if (setpgid(0, setup.process_group) != 0)
    report_and_exit(report_fd, errno);
  // Die with clock; then make sure clock did not die before that took hold.
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (getppid() != parent)
    _exit(exec_failure_status(0));
  if (setup.take_terminal)
    set_foreground(setup.process_group);
  setup.relay->reset_in_child();
  util::restore_file_size_signal();
  sigprocmask(SIG_SETMASK, setup.original_mask, nullptr);
  execvpe(command.file(), command.argv(), command.envp());
  report_and_exit(report_fd, errno);
}

// The child of vfork_into_cgroup.
struct ChildStart {
  const Command* command;
  const ChildSetup* setup;
  pid_t parent;
  int report_fds[2];
};

[[gnu::no_sanitize_address]] void start_command(void* context) {
  const auto* start = static_cast<const ChildStart*>(context);
  close(start->report_fds[0]);
  become_command(*start->command, *start->setup, start->parent, start->report_fds[1], true);
}

// The child's report: 0 when exec succeeded (the pipe closed empty).
int read_failure(int fd) {
  ChildFailure failure{};
  std::size_t got = 0;
  while (got < sizeof failure) {
    ssize_t n = read(fd, reinterpret_cast<char*>(&failure) + got, sizeof failure - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    got += static_cast<std::size_t>(n);
  }
  return got == sizeof failure ? failure.error : 0;
}

[[noreturn]] void fail(const std::string& file, const char* what) {
  throw Error(ExitCode::cannot_execute, "cannot start " + file + ": " + what + ": " +
                                            std::generic_category().message(errno) +
                                            "; check the process limits");
}

}  // namespace

Command::Command(const std::vector<std::string>& argv,
                 const std::map<std::string, std::string>& extra_env) {
  if (argv.empty())
    throw Error(ExitCode::usage, "no command given to run; put it after --");
  m_strings = argv;
  std::size_t argc = m_strings.size();
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string_view text(*entry);
    auto name = text.substr(0, text.find('='));
    if (!extra_env.contains(std::string(name)))
      m_strings.emplace_back(text);
  }
  for (const auto& [name, value] : extra_env)
    m_strings.push_back(name + "=" + value);
  // Pointers last: m_strings no longer grows.
  for (std::size_t i = 0; i < m_strings.size(); ++i) {
    (i < argc ? m_argv : m_envp).push_back(m_strings[i].data());
  }
  m_argv.push_back(nullptr);
  m_envp.push_back(nullptr);
}

Spawned spawn(const Command& command, const ChildSetup& setup) {
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0)
    fail(command.file(), "pipe");
  pid_t parent = getpid();
  ChildStart start{&command, &setup, parent, {report[0], report[1]}};
  pid_t pid =
      setup.cgroup_dir_fd >= 0 ? vfork_into_cgroup(setup.cgroup_dir_fd, start_command, &start) : -1;
  const bool in_cgroup = pid >= 0;
  if (!in_cgroup && setup.cgroup_dir_fd >= 0)
    spdlog::debug("clone3 into the job's cgroup: {}; the command moves in after vfork",
                  strerror(errno));
  // Without a cgroup, vfork: no copy of clock's page tables, and the child
  // runs at once while clock waits for its exec anyway. become_command()
  // only makes system calls on its own stack frames and ends in exec or
  // _exit, as vfork asks.
  if (!in_cgroup)
    pid = vfork();
  if (pid < 0) {
    int saved = errno;
    close(report[0]);
    close(report[1]);
    errno = saved;
    fail(command.file(), "fork");
  }
  if (pid == 0) {  // vfork's child
    close(report[0]);
    become_command(command, setup, parent, report[1], in_cgroup);
  }
  close(report[1]);
  // Here too: whichever runs first, the child is in its group before clock
  // signals the group. EACCES: the child has already exec'd, so it did this
  // itself. (The terminal needs no such care: clock waits for the exec.)
  setpgid(pid, setup.process_group);
  int error = read_failure(report[0]);
  close(report[0]);
  if (error == 0)
    return {pid, 0};
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  spdlog::error("{}", exec_failure_message(command.file(), error));
  return {-1, exec_failure_status(error)};
}

int exit_status_of(int wait_status) {
  if (WIFEXITED(wait_status))
    return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status))
    return 128 + WTERMSIG(wait_status);
  return exit_status(ExitCode::internal);
}

int exec_failure_status(int error) {
  return exit_status(error == ENOENT ? ExitCode::not_found : ExitCode::cannot_execute);
}

std::string exec_failure_message(std::string_view file, int error) {
  std::string message(file);
  if (error == ENOENT)
    return message + ": command not found";
  return message + ": cannot execute: " + std::strerror(error);
}

}  // namespace clk::run
