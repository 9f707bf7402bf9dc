// Seeds for the pseudo-random generators that jitter retries and polls.
#pragma once

#include <cstdint>

namespace clk::util {

// 64 bits from the kernel's random source (getrandom(2)); if that fails, the
// time and the pid mixed, which is enough to keep processes apart.
//
// Not std::random_device: its constructor probes the CPU for RDRAND with
// cpuid, which traps to the hypervisor in a VM (perf: 2% of an uncontended
// SQLite `clock run`, where one is made on every open).
std::uint64_t random_seed();

}  // namespace clk::util
