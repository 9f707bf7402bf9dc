// clone3 into the job's cgroup. Made in its cgroup, the child joins it at
// no cost; moved in after the fork (a write to cgroup.procs), it would wait
// for the kernel's RCU grace period, 6 to 18 ms on an idle host. A fork
// copies clock's page tables, then pays a fault for each page either process
// writes before the child execs: about 0.2 ms of every run
// (docs/performance.md). Sharing the memory as vfork does avoids both, but
// the child then needs a stack of its own, and a child of clone3 called
// through syscall() would return into a frame that its new stack does not
// hold. So the system call is made here, in a few lines of assembly that
// call the child's body on its stack, as glibc's own clone3 does (glibc 2.36
// does not export it, and its posix_spawn cannot start a child in a cgroup
// before glibc 2.39).
#include "run/vfork_into_cgroup.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <linux/sched.h>
#include <sanitizer/asan_interface.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace clk::run {

namespace {

#if defined(__x86_64__)

#define CLK_NUMBER_TEXT(n) #n
#define CLK_NUMBER(n) CLK_NUMBER_TEXT(n)

// clone3(args, size); in the child, body(context) on the new stack, then
// exit(127) should it return. Returns the child's pid or -errno. The body
// and its context wait in r9 and r8, which the system call preserves.
[[gnu::naked]] long clone3_calling(clone_args*, std::size_t, ChildBody, void*) {
  asm("mov %rdx, %r9\n\t"
      "mov %rcx, %r8\n\t"
      "mov $" CLK_NUMBER(__NR_clone3) ", %eax\n\t"
      "syscall\n\t"
      "test %rax, %rax\n\t"
      "jz 1f\n\t"
      "ret\n"
      "1:\n\t"
      "xor %ebp, %ebp\n\t"  // the outermost frame, for whatever walks the stack
      "and $-16, %rsp\n\t"
      "mov %r8, %rdi\n\t"
      "call *%r9\n\t"
      "mov $127, %edi\n\t"
      "mov $" CLK_NUMBER(__NR_exit) ", %eax\n\t"
      "syscall\n\t"
      "ud2");
}

// As large as clock's own stack may grow (RLIMIT_STACK, 8 MiB by default),
// which also bounds the argument list exec takes, and so the argv that exec
// builds on the stack for a script without #!; at most 256 MiB. Reserved,
// not touched: the child uses a few pages of it.
std::size_t child_stack_size() {
  constexpr std::size_t k_least = std::size_t{8} << 20;
  constexpr std::size_t k_most = std::size_t{256} << 20;
  rlimit limit{};
  if (getrlimit(RLIMIT_STACK, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
    return k_most;
  return std::clamp(static_cast<std::size_t>(limit.rlim_cur), k_least, k_most);
}

#endif

}  // namespace

pid_t vfork_into_cgroup(int cgroup_fd, ChildBody body, void* context) {
  clone_args args{};
  args.flags = CLONE_INTO_CGROUP;
  args.exit_signal = SIGCHLD;
  args.cgroup = static_cast<std::uint64_t>(cgroup_fd);
#if defined(__x86_64__)
  const std::size_t stack_size = child_stack_size();
  void* stack = mmap(nullptr, stack_size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED)
    return -1;
  // Its lowest page faults, rather than let an overflow write into clock.
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  if (mprotect(stack, page, PROT_NONE) != 0) {
    int saved = errno;
    munmap(stack, stack_size);
    errno = saved;
    return -1;
  }
  args.flags |= CLONE_VM | CLONE_VFORK;
  args.stack = reinterpret_cast<std::uint64_t>(stack);
  args.stack_size = stack_size;
  long result = clone3_calling(&args, sizeof args, body, context);
  // The child has exec'd or exited: the stack is free again.
  ASAN_UNPOISON_MEMORY_REGION(stack, stack_size);
  munmap(stack, stack_size);
  if (result < 0) {
    errno = static_cast<int>(-result);
    return -1;
  }
  return static_cast<pid_t>(result);
#else
  long pid = syscall(SYS_clone3, &args, sizeof args);
  if (pid == 0) {
    body(context);
    _exit(127);
  }
  return static_cast<pid_t>(pid);
#endif
}

}  // namespace clk::run
