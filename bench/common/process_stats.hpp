// What a benchmark reads about processes on this machine: its own peak memory and CPU time, and
// another process's CPU time (a server's, read from /proc while a client measures it).
#pragma once

#include <optional>
#include <sys/types.h>

namespace duet::bench {

/// Peak resident memory of this process so far, in GiB (getrusage).
double peak_rss_gib();

/// User + system CPU time of this process so far, every thread included, in seconds (getrusage).
double self_cpu_seconds();

/// User + system CPU time of process `pid` so far, every thread included, in seconds, read from
/// /proc/PID/stat (clock ticks, so 10 ms steps on most kernels); nullopt when the process does
/// not exist or the file cannot be read or parsed.
std::optional<double> process_cpu_seconds(pid_t pid);

}  // namespace duet::bench
