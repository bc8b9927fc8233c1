// Operation streams for duet_bench_mvrlu: keys of a set of `items` elements drawn from a range
// of 2 x items (so that half inserts, half removes keep it near `items`), uniform, Pareto 80-20
// or Zipf; generated per thread before any clock starts and replayed by every system.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace duet::bench::mvrlu {

enum class Dist : std::uint8_t { kUniform, kPareto, kZipf };
/// "uniform", "pareto80-20", "zipf".
const char* dist_name(Dist d);

/// One workload: what the streams draw.
struct WorkloadSpec {
  std::uint64_t items = 10000;   ///< prefilled elements; keys come from [0, 2 x items)
  double update_percent = 20;    ///< updates: half inserts, half removes; the rest contains
  Dist dist = Dist::kUniform;
  double theta = 0;              ///< Zipf skew (0 <= theta < 1)
  std::uint64_t seed = 1;
};

/// An operation: the kind in the top two bits, the key below.
enum class Op : std::uint64_t { kContains = 0, kInsert = 1, kRemove = 2 };
inline Op op_of(std::uint64_t e) { return static_cast<Op>(e >> 62); }
inline std::uint64_t key_of(std::uint64_t e) { return e & ((std::uint64_t{1} << 62) - 1); }

/// The keys to prefill: `items` distinct keys of the range, in a random order (deterministic
/// in the seed). Build a list from them in descending order (each insert at the head).
std::vector<std::uint64_t> prefill_keys(const WorkloadSpec& w);

/// `threads` streams of `ops` operations each (stream i from a seed derived from w.seed and i).
/// Popularity follows rank order, and ranks are scattered over the key range by a fixed
/// permutation (multiplication by an odd constant prime to the range), so the hot keys are
/// spread over buckets and list positions.
std::vector<std::vector<std::uint64_t>> make_streams(const WorkloadSpec& w, unsigned threads, std::uint64_t ops);

}  // namespace duet::bench::mvrlu
