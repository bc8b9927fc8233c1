// The time-stamp counter as a clock shared by cores: whether this machine's TSC can serve, a
// fenced read, and ORDO's boundary (Kashyap et al., EuroSys'18), the most by which two cores'
// TSCs may read apart. MV-RLU's clock (src/mvrlu/clock.hpp) and the txn keyspace's TSC clock
// (TxnClock::kTsc, docs/txn.md "Timestamp source") both build on it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "duet/status.hpp"

namespace duet::clock {

/// Whether CPUID reports an invariant TSC (constant rate, runs in every C-state). False off
/// x86-64.
bool tsc_invariant();

/// Ok when the TSC can be a keyspace's clock: an invariant TSC (tsc_invariant) that the kernel
/// keeps as its clocksource (it switches away when it finds cores' TSCs out of step).
/// Otherwise InvalidArgument saying which, and to use the counter clock.
Status tsc_clock_usable();

/// The TSC, read after every earlier instruction has executed (not after earlier stores have
/// drained) and before any later one starts (RDTSCP; LFENCE). 0 off x86-64.
inline std::uint64_t ordered_tsc() {
#if defined(__x86_64__)
  unsigned aux = 0;
  const std::uint64_t t = __rdtscp(&aux);
  _mm_lfence();
  return t;
#else
  return 0;
#endif
}

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

/// The first `max` CPUs this thread may run on (its affinity mask), ascending; empty when the
/// mask cannot be read.
std::vector<int> allowed_cpus(std::size_t max);

/// ORDO's bound for one pair of CPUs (-1: unpinned threads): two threads pinned to ci and cj
/// pass TSC values back and forth `rounds` times each way; for each direction the least
/// (receiver's TSC on seeing the value) - (the value) is the one-way latency plus the
/// receiver's offset, so an upper bound of that offset. Returns the larger direction's, at
/// least 0. *pinned becomes false when a thread could not be pinned. A partner that stops
/// answering (about 2^26 polls) ends the probe with what was measured.
std::int64_t ordo_pair_bound(int ci, int cj, int rounds, bool* pinned);

/// ORDO's boundary for this process: the largest ordo_pair_bound (300 rounds) over every pair
/// of the first 64 CPUs this process may run on (two unpinned threads when it may run on one).
/// Measured on the first call, then remembered; logged once. `detail` (may be null) receives a
/// one-line description. Cost: about 1 ms per pair on a 16-core machine's first call.
std::uint64_t measure_ordo_boundary(std::string* detail);

}  // namespace duet::clock
