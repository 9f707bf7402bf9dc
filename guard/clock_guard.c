/* clock-guard: the guard process of `clock run` (src/run/guard.hpp).
 *
 * clock starts it in a new process group, which the command then joins,
 * with one end of a socket pair as fd 3 and every signal blocked. Once it
 * ignores them it writes one byte to fd 3 (clock waits for it before it
 * starts the command), then reads fd 3 until end-of-file, which comes only
 * when clock has died (clock stands it down with SIGKILL when it finishes
 * normally), and then kills the group, grandchildren included.
 *
 * It is a separate program, not a fork of clock: a fork costs an
 * uncontended `clock run` about 0.2 ms (clock's page tables copied, then a
 * copy-on-write fault for every page clock writes afterwards), and this
 * program's exec runs beside clock (src/run/guard_program.cpp). Where it is
 * built freestanding (x86_64, aarch64) it runs no code but its own: no
 * dynamic loader, no C library start-up.
 */
#include <linux/errno.h>
#include <signal.h>
#include <stddef.h>
#include <sys/syscall.h>

enum { k_socket_fd = 3 };

#if defined(CLOCK_GUARD_FREESTANDING) && defined(__x86_64__)
static long sys(long number, long a, long b, long c, long d) {
  register long r10 __asm__("r10") = d;
  long result;
  __asm__ volatile("syscall"
                   : "=a"(result)
                   : "a"(number), "D"(a), "S"(b), "d"(c), "r"(r10)
                   : "rcx", "r11", "memory");
  return result;
}
#elif defined(CLOCK_GUARD_FREESTANDING) && defined(__aarch64__)
static long sys(long number, long a, long b, long c, long d) {
  register long x8 __asm__("x8") = number;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  __asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
  return x0;
}
#else
#include <errno.h>
#include <unistd.h>
static long sys(long number, long a, long b, long c, long d) {
  long result = syscall(number, a, b, c, d);
  return result < 0 ? -(long)errno : result;
}
#endif

/* The kernel's struct sigaction (not the C library's). */
struct kernel_sigaction {
  void (*handler)(int);
  unsigned long flags;
  void (*restorer)(void);
  unsigned long mask;
};

/* Ignores every signal that can be ignored: the command's group receives
 * the terminal's and clock's forwarded signals (and Ctrl-Z), and only the
 * command should act on them. Pending ones, blocked since the spawn, are
 * discarded by being ignored; then nothing stays blocked. */
static void ignore_signals(void) {
  struct kernel_sigaction ignore = {SIG_IGN, 0, NULL, 0};
  for (long signo = 1; signo <= 64; ++signo) {
    if (signo != SIGKILL && signo != SIGSTOP)
      sys(SYS_rt_sigaction, signo, (long)&ignore, 0, sizeof ignore.mask);
  }
  unsigned long none = 0;
  sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&none, 0, sizeof none);
}

/* Keeps only the socket: the guard must not hold clock's standard streams
 * (a pipe a reader waits on) or anything else open for longer than clock. */
static void close_all_but_socket(void) {
  for (long fd = 0; fd < k_socket_fd; ++fd)
    sys(SYS_close, fd, 0, 0, 0);
  if (sys(SYS_close_range, k_socket_fd + 1, ~0U, 0, 0) != 0) {
    for (long fd = k_socket_fd + 1; fd < 1024; ++fd)
      sys(SYS_close, fd, 0, 0, 0);
  }
}

static void guard(void) {
  ignore_signals();
  close_all_but_socket();
  /* Tells clock it may put the command in this process group. */
  char ready = 'g';
  sys(SYS_write, k_socket_fd, (long)&ready, 1, 0);
  char byte;
  for (;;) {
    long n = sys(SYS_read, k_socket_fd, (long)&byte, 1, 0);
    if (n == 1)
      return; /* nothing writes here: not clock's death */
    if (n != -EINTR)
      break; /* end-of-file or error: clock is gone */
  }
  /* Only ever its own group: never the group clock was started in, which may
   * hold the rest of a pipeline. */
  if (sys(SYS_getpgid, 0, 0, 0, 0) == sys(SYS_getpid, 0, 0, 0, 0))
    sys(SYS_kill, 0, SIGKILL, 0, 0);
}

#if defined(CLOCK_GUARD_FREESTANDING)
/* The entry point: there is no C library to call main(). The x86_64 stack is
 * 16-byte aligned here, not as after a call: realign it. */
#if defined(__x86_64__)
__attribute__((force_align_arg_pointer))
#endif
__attribute__((noreturn)) void
_start(void) {
  guard();
  for (;;)
    sys(SYS_exit_group, 0, 0, 0, 0);
}
#else
int main(void) {
  guard();
  return 0;
}
#endif
