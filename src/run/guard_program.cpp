// Starting the guard program. On x86_64 a clone(CLONE_VM) child that makes
// three raw system calls and execs: clock goes on at once, and the exec runs
// beside it. Elsewhere (and under sanitizers and valgrind, which do not
// expect a process sharing clock's memory) a vfork child, for whose exec
// clock waits: about 0.13 ms of an uncontended run (docs/performance.md).
#include "run/guard_program.hpp"

#include <array>
#include <atomic>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/signals.hpp"
#include "util/private_files.hpp"
#include "util/sanitizers.hpp"

#if defined(__x86_64__) && !CLOCK_SANITIZED
#define CLOCK_GUARD_CLONE 1
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#else
#define CLOCK_GUARD_CLONE 0
#endif

namespace clk::run {

namespace {

char k_name[] = "clock-guard";

// Every signal blocked around the start: no handler of clock's may run in
// the child, and the program unblocks them only once it ignores them.
sigset_t all_signals() {
  sigset_t all;
  sigfillset(&all);
  return all;
}

// The vforked child: only system calls, then exec or _exit, as vfork asks.
[[noreturn]] void become_guard_program(const char* program, int socket) {
  setpgid(0, 0);
  if (socket == k_guard_fd)
    fcntl(socket, F_SETFD, 0);  // keep it open across the exec
  else
    dup2(socket, k_guard_fd);  // the copy is not close-on-exec
  char* argv[] = {k_name, nullptr};
  char* envp[] = {nullptr};
  execve(program, argv, envp);
  _exit(127);
}

pid_t vfork_guard_program(const std::string& program, int socket) {
  BlockedSignals blocked(all_signals());
  pid_t pid = vfork();
  if (pid == 0)
    become_guard_program(program.c_str(), socket);
  return pid;
}

#if CLOCK_GUARD_CLONE

#define CLOCK_GUARD_CODE __attribute__((noinline, no_sanitize("undefined")))

// What the cloned child reads, in memory it shares with clock: static, so
// clock neither frees nor changes it while the child may still read it, and
// used by the first launch of a process only.
struct Launch {
  std::array<char, 4096> program{};
  char* argv[2] = {k_name, nullptr};
  char* envp[1] = {nullptr};
  long socket = -1;
  alignas(16) std::array<char, 16 * 1024> stack{};  // its few frames call only the kernel
};
Launch g_launch;
std::atomic<bool> g_launched{false};

// A system call that returns -errno instead of setting errno: the child
// shares clock's memory and thread-local storage, so it must not write
// clock's errno (or anything else of clock's).
CLOCK_GUARD_CODE long raw(long number, long a = 0, long b = 0, long c = 0) {
  long result;
  asm volatile("syscall"
               : "=a"(result)
               : "a"(number), "D"(a), "S"(b), "d"(c)
               : "rcx", "r11", "memory");
  return result;
}

CLOCK_GUARD_CODE int cloned_child(void*) {
  raw(SYS_setpgid, 0, 0);
  if (g_launch.socket == k_guard_fd)
    raw(SYS_fcntl, k_guard_fd, F_SETFD, 0);
  else
    raw(SYS_dup2, g_launch.socket, k_guard_fd);
  raw(SYS_execve, reinterpret_cast<long>(g_launch.program.data()),
      reinterpret_cast<long>(g_launch.argv), reinterpret_cast<long>(g_launch.envp));
  for (;;)
    raw(SYS_exit, 127);
}

bool may_clone(const std::string& program) {
#ifdef RUNNING_ON_VALGRIND
  if (RUNNING_ON_VALGRIND)
    return false;
#endif
  return program.size() < g_launch.program.size() && !g_launched.exchange(true);
}

pid_t clone_guard_program(const std::string& program, int socket) {
  std::memcpy(g_launch.program.data(), program.c_str(), program.size() + 1);
  g_launch.socket = socket;
  BlockedSignals blocked(all_signals());
  // No CLONE_FILES or CLONE_SIGHAND: the child's fd table and signal
  // dispositions are its own copies from the start.
  return clone(cloned_child, g_launch.stack.data() + g_launch.stack.size(), CLONE_VM | SIGCHLD,
               nullptr);
}

#endif

}  // namespace

std::optional<std::string> find_guard_program() {
  for (const auto& candidate : util::private_file_candidates(k_name)) {
    if (access(candidate.c_str(), X_OK) == 0)
      return candidate.string();
  }
  return std::nullopt;
}

pid_t launch_guard_program(const std::string& program, int socket) {
#if CLOCK_GUARD_CLONE
  if (may_clone(program))
    return clone_guard_program(program, socket);
#endif
  return vfork_guard_program(program, socket);
}

}  // namespace clk::run
