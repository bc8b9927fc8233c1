// Workload generation for the L-Slab benchmark: uniform random 8-byte keys and values.
//
// The R resident keys are key(i) = splitmix64 output i for i in [0, R): a bijection of i, so
// the keys are distinct, look uniformly random, and need no table to be sampled (any index
// picks a random resident key in O(1)). Requests are generated into plain arrays before a
// timed run, so timing sees only the maps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "index/lslab/types.hpp"

namespace duet::bench::lslab {

/// The benchmark's operation mixes.
enum class BenchOp : std::uint8_t {
  kGet,     ///< GET of resident keys (all must hit)
  kPut,     ///< PUT of new values to resident keys (size stays R)
  kDelete,  ///< DELETE of distinct resident keys per batch; the driver re-inserts them untimed
  kMix,     ///< 50% GET, 50% PUT of resident keys
};

/// "get", "put", "delete", "mix".
const char* bench_op_name(BenchOp op);
/// The op for one of the names above, or nullopt.
std::optional<BenchOp> parse_bench_op(const std::string& name);

/// splitmix64's output function: a bijection on 64-bit words that spreads every input bit.
inline std::uint64_t splitmix_mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// The splitmix64 generator (Steele, Lea, Flood 2014): fast, 2^64 period, good enough for
/// sampling keys and values.
class SplitMix64 {
 public:
  static constexpr std::uint64_t kGamma = 0x9e3779b97f4a7c15ull;
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  /// The next 64 random bits.
  std::uint64_t next() { return splitmix_mix(state_ += kGamma); }
  /// A uniform integer in [0, n), n > 0 (multiply-shift reduction; bias is below 2^-40 here).
  std::uint64_t below(std::uint64_t n) {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }

 private:
  std::uint64_t state_;
};

/// The resident key set of one run: R distinct keys, none of them the reserved key.
class Keyspace {
 public:
  /// Keys for `resident` entries from `seed`. If the reserved key would be among them (odds
  /// about R / 2^64) the seed is moved on until it is not; seed() tells the one used.
  Keyspace(std::uint64_t resident, std::uint64_t seed);

  std::uint64_t size() const { return resident_; }
  std::uint64_t seed() const { return seed_; }
  /// Resident key i, i < size(): output i of splitmix64 seeded with seed().
  std::uint64_t key(std::uint64_t i) const { return splitmix_mix(seed_ + (i + 1) * SplitMix64::kGamma); }
  /// The value key(i) holds after the prefill.
  std::uint64_t initial_value(std::uint64_t i) const { return splitmix_mix(~seed_ + (i + 1) * SplitMix64::kGamma); }

 private:
  std::uint64_t resident_;
  std::uint64_t seed_;
};

/// A batch's requests in structure-of-arrays form, sized for the largest run.
struct Requests {
  std::vector<duet::lslab::Op> ops;
  std::vector<std::uint64_t> keys;
  std::vector<std::uint64_t> values;
  /// Grows the arrays to hold n requests (never shrinks).
  void reserve(std::size_t n);
};

/// Requests for one timed repetition: n requests (a multiple of `batch`) of kind `op` on
/// resident keys of `ks`, from `seed`. GET, PUT and MIX sample resident keys uniformly with
/// replacement; DELETE gives each batch `batch` distinct keys (a window of resident indices
/// at a random start), so it needs batch <= ks.size(). PUT values are fresh random words.
void generate_requests(const Keyspace& ks, BenchOp op, std::size_t n, std::size_t batch, std::uint64_t seed,
                       Requests* out);

/// The prefill's requests [0, end - begin): PUT key(i) = initial_value(i) for i in [begin, end).
void generate_prefill(const Keyspace& ks, std::uint64_t begin, std::uint64_t end, Requests* out);

/// The seed of the requests of one repetition. It depends on the run's seed, R, op, batch and
/// repetition only, so every system and load factor sees identical request streams.
std::uint64_t rep_seed(std::uint64_t seed, std::uint64_t resident, BenchOp op, std::uint64_t batch, unsigned rep);

/// Requests per repetition: the smallest multiple of `batch` that is at least
/// max(batch, min_ops), so small batches run many times per repetition.
std::size_t requests_per_rep(std::size_t batch, std::size_t min_ops);

}  // namespace duet::bench::lslab
