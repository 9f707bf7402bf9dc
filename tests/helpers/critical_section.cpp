// clock_critical_section COUNTER_FILE LOG_FILE [ITERATIONS]: the child that the
// mutual-exclusion tests run under `clock run`. It increments the integer in
// COUNTER_FILE ITERATIONS times (default 1) by read, pause, rewrite in place,
// so two overlapping runs lose increments, and appends one line
// "start_ns end_ns pid token" (CLOCK_MONOTONIC, CLOCK_TOKEN) to LOG_FILE with a
// single O_APPEND write, so the test can check that no two runs overlapped.
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

[[noreturn]] void die(const char* what, const char* path) {
  std::fprintf(stderr, "clock_critical_section: %s %s: %s\n", what, path, std::strerror(errno));
  std::exit(2);
}

// 0 for a missing or empty file: an overlapping writer that has just truncated
// the file makes us lose the count, which is what the test must detect.
long long read_counter(const char* path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return 0;
    die("cannot open", path);
  }
  char buffer[64] = {};
  ssize_t n = read(fd, buffer, sizeof buffer - 1);
  if (n < 0)
    die("cannot read", path);
  close(fd);
  return std::strtoll(buffer, nullptr, 10);
}

void write_counter(const char* path, long long value) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    die("cannot open", path);
  std::string text = std::to_string(value) + "\n";
  if (write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    die("cannot write", path);
  }
  close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: clock_critical_section COUNTER_FILE LOG_FILE [ITERATIONS]\n");
    return 2;
  }
  const char* counter_file = argv[1];
  const char* log_file = argv[2];
  int iterations = argc == 4 ? std::atoi(argv[3]) : 1;

  long long start = monotonic_ns();
  for (int i = 0; i < iterations; ++i) {
    long long value = read_counter(counter_file);
    usleep(200);  // the body of the critical section: widens any race window
    write_counter(counter_file, value + 1);
  }
  long long end = monotonic_ns();

  const char* token = std::getenv("CLOCK_TOKEN");
  std::string line = std::to_string(start) + " " + std::to_string(end) + " " +
                     std::to_string(getpid()) + " " + (token && *token ? token : "-") + "\n";
  int fd = open(log_file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    die("cannot open", log_file);
  if (write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    die("cannot write", log_file);
  }
  close(fd);
  return 0;
}
