// Leaving a short-lived process without tearing down what the kernel frees
// anyway.
#pragma once

namespace clk::util {

// Flushes stdout, stderr and the log, then ends the process with `status`
// at once: no destructors, no atexit handlers, no freeing of memory. For a
// process whose work is done and durable (a committed release). Builds with
// a sanitizer return instead, so that its leak check at exit still runs;
// the caller then returns `status` as usual.
void quick_exit_if_possible(int status);

}  // namespace clk::util
