// clock_section_recorder LOG_FILE HOLD_MS LABEL...: the child that the lock
// model tests run under `clock run`. It stays HOLD_MS milliseconds, then
// appends one line "start_ns end_ns pid resources tokens LABEL..." to LOG_FILE
// with a single O_APPEND write, where the instants are CLOCK_MONOTONIC (one
// clock for every process of the machine) and resources and tokens are
// CLOCK_RESOURCE and CLOCK_TOKEN ("-" when unset, as outside `clock run`).
// LABEL says what the test asked for (namespace, mode, slots…), so that a
// checker can prove from the log alone that no two conflicting sections met.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <time.h>
#include <unistd.h>

namespace {

long long monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1'000'000'000LL + ts.tv_nsec;
}

std::string env_or_dash(const char* name) {
  const char* value = std::getenv(name);
  return value && *value ? value : "-";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: clock_section_recorder LOG_FILE HOLD_MS LABEL...\n");
    return 2;
  }
  const char* log_file = argv[1];
  long hold_ms = std::strtol(argv[2], nullptr, 10);

  long long start = monotonic_ns();
  if (hold_ms > 0) {
    timespec pause{hold_ms / 1000, (hold_ms % 1000) * 1'000'000L};
    while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {
    }
  }
  long long end = monotonic_ns();

  std::string line = std::to_string(start) + " " + std::to_string(end) + " " +
                     std::to_string(getpid()) + " " + env_or_dash("CLOCK_RESOURCE") + " " +
                     env_or_dash("CLOCK_TOKEN");
  for (int i = 3; i < argc; ++i)
    line += std::string(" ") + argv[i];
  line += "\n";
  int fd = open(log_file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::fprintf(stderr, "clock_section_recorder: cannot open %s: %s\n", log_file,
                 std::strerror(errno));
    return 2;
  }
  if (write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    std::fprintf(stderr, "clock_section_recorder: cannot write %s: %s\n", log_file,
                 std::strerror(errno));
    return 2;
  }
  close(fd);
  return 0;
}
