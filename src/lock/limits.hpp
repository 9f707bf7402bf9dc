// The most bytes each fact a caller tells about itself may take. The server
// routines refuse more (check_bounds() in sql/postgres/functions/10_util.sql;
// clock_rec_check_command and the procedures' parameters on MariaDB), since
// status and history show them to everyone (docs/threat-model.md, "Bounds of
// a call"); the client cuts its own to these first, so a normal run never
// meets the refusal.
#pragma once

#include <cstddef>
#include <string>

namespace clk::lock {

inline constexpr std::size_t k_max_host_bytes = 255;
inline constexpr std::size_t k_max_ip_bytes = 64;
inline constexpr std::size_t k_max_user_bytes = 255;
inline constexpr std::size_t k_max_command_bytes = 4096;
inline constexpr std::size_t k_max_by_bytes = 512;  // who asked: "user@host pid N"

// `text` cut to at most `max_bytes` on a UTF-8 character boundary, ending in
// "…" when cut (a command line longer than its bound is shown by its start).
std::string bounded(std::string text, std::size_t max_bytes);

}  // namespace clk::lock
