// `clock config --init [FILE]`: a commented starter config file, written by
// a documented command so that no set-up step edits a file that may not
// exist (man/clock.1, "clock config").
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace clk::config {

// The starter text: every key commented out at its default, the database
// set when one is given.
std::string starter_text(const std::optional<std::string>& database_url);

// Writes the starter to `file`, creating its folders (0755). Mode 0600 when
// the database URL holds a password (clock refuses such a file otherwise),
// else 0644. A file that sets any key, or is not TOML, is refused (exit 78,
// naming it); one of comments, blank lines and table headers only, as the
// package installs /etc/clock/clock.toml, is replaced. Returns what it did, for one line on
// stdout.
std::string write_starter_file(const std::filesystem::path& file,
                               const std::optional<std::string>& database_url);

}  // namespace clk::config
