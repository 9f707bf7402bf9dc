// SIGXFSZ, which by default kills a process that writes past its file size
// limit (RLIMIT_FSIZE, `ulimit -f`, systemd's LimitFSIZE=) without a word.
// clock ignores it, so such a write fails with EFBIG and becomes a clear
// error (exit 74); a command that clock runs gets the disposition clock was
// started with.
#pragma once

namespace clk::util {

// Remembers the inherited action for SIGXFSZ and ignores the signal.
void ignore_file_size_signal();

// Puts back the inherited action; async-signal-safe (for a child between
// fork and exec).
void restore_file_size_signal();

}  // namespace clk::util
