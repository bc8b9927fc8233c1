// The time-stamp counter as a txn keyspace's clock (TxnClock::kTsc; docs/txn.md, "Timestamp
// source"): whether this machine's TSC can serve, a fenced read, and ORDO's measurement of how
// far apart two cores' TSCs may read.
#pragma once

#include <cstdint>
#include <vector>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "duet/status.hpp"

namespace duet::txn {

#if defined(__x86_64__)
/// The TSC, read once every earlier load and store of this thread is globally visible and
/// before any later one starts (MFENCE; LFENCE; RDTSC; LFENCE, as the Intel SDM gives).
inline std::uint64_t fenced_tsc() {
  _mm_mfence();
  _mm_lfence();
  const std::uint64_t t = __rdtsc();
  _mm_lfence();
  return t;
}
#endif

/// Ok when the TSC can be the clock: x86-64, a TSC that runs at a constant rate in every power
/// state (constant_tsc and nonstop_tsc in /proc/cpuinfo), and one the kernel keeps as its
/// clocksource (it switches away when it finds cores' TSCs out of step). Otherwise
/// InvalidArgument saying which, and to use the counter clock.
Status tsc_clock_usable();

/// One ordered pair of CPUs and the least TSC difference seen from a store of the TSC on
/// `from` to its load on `to`: the one-way latency plus to's offset from from, so an upper bound
/// of that offset.
struct TscPair {
  int from = 0, to = 0;
  std::int64_t least = 0;
};
/// Measures every ordered pair of the first `max_cpus` CPUs this thread may run on, `rounds`
/// store-load trips each, on two helper threads pinned to the pair (the caller is not pinned).
/// Cost: about rounds x 2 one-way trips plus two thread starts per pair. Empty without a TSC or
/// when the CPU set cannot be read.
std::vector<TscPair> measure_tsc_pairs(int rounds, std::size_t max_cpus);

/// TxnConfig::kMeasureBoundary's boundary: the largest `least` of measure_tsc_pairs(100, every
/// CPU), at least 0 and at most 2^20 (2^20 when the CPU set cannot be read; 0 without a TSC).
/// Measured on the first call, then remembered for the process.
std::uint64_t measured_tsc_boundary();

}  // namespace duet::txn
