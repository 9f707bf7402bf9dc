// Whether a config file clock found on its own (not named by --config or
// CLOCK_CONFIG) may be trusted: whoever can write it chooses the database
// every job locks against, and the commands that run under those locks.
#pragma once

#include <filesystem>

namespace clk::config {

// Throws clk::Error(config) naming `file` and why, as ssh does for its config:
// the file is owned by a user other than the caller or root, or its group or
// others may write it. A file that cannot be examined is left to the reader.
void check_config_file_ownership(const std::filesystem::path& file);

}  // namespace clk::config
