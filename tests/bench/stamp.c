/* stamp FILE: writes the CLOCK_MONOTONIC time in nanoseconds to FILE and exits.
 * The hand-over benchmark runs it as the last act of a holder's child and as
 * the first act of a waiter's child: one host, one monotonic clock, and a
 * static binary that starts in well under a millisecond (a shell's `date`
 * would add a fork and a dynamic link to every sample). */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char** argv) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  if (argc != 2) {
    fputs("usage: stamp FILE\n", stderr);
    return 64;
  }
  char text[32];
  int len = snprintf(text, sizeof text, "%lld\n", (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || write(fd, text, (size_t)len) != len || close(fd) != 0) {
    perror(argv[1]);
    return 1;
  }
  return 0;
}
