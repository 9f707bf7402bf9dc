// clock_without_clone3 COMMAND [ARG...]: runs COMMAND with the clone3 system
// call refused (ENOSYS), as the seccomp filters of some container runtimes
// refuse it, so that the tests reach clock's way of starting a job without
// it (src/run/spawn.cpp). The filter is inherited by everything COMMAND
// starts; glibc's own fork and posix_spawn fall back to clone on ENOSYS.
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: clock_without_clone3 COMMAND [ARG...]\n");
    return 2;
  }
  // The system call's number only, not its architecture: a test helper for
  // the build's own architecture.
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
    std::fprintf(stderr, "clock_without_clone3: seccomp: %s\n", std::strerror(errno));
    return 1;
  }
  execvp(argv[1], argv + 1);
  std::fprintf(stderr, "clock_without_clone3: %s: %s\n", argv[1], std::strerror(errno));
  return 127;
}
