// Workloads of duet_bench_lit (dissertation section 6.5): keys, the prefilled half of the key
// range, and the operations each thread draws during a run.
//
// Keys are 1..K for a key range K. The prefill is a random half: key perm(i) + 1 for
// i < K/2, where perm is a keyed permutation of [0, K) (a Feistel network with cycle walking),
// so it needs no table and any thread can insert any slice of it. During a run each thread
// draws its operations from its own SplitMix64 stream (one or two draws per operation, the
// same cost for every system); Zipfian keys come from a trace of ranks drawn before the run
// is timed (one pow() per Zipfian draw would otherwise cost more than many operations).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../kv/ycsb.hpp"

namespace duet::bench::lit {

/// What one operation does.
enum class OpKind : std::uint8_t {
  kGet = 0,     ///< GET key
  kInsert = 1,  ///< INSERT key -> value_for(key) (no change when present)
  kRemove = 2,  ///< REMOVE key
  kRange = 3,   ///< RANGE [key, key + range_length - 1]
};

/// The value every system stores for `key` (prefill and INSERT alike), so that a GET or a range
/// query can check what it read: a bijection of the key, never 0.
inline constexpr std::uint64_t value_for(std::uint64_t key) { return key * 0x9e3779b97f4a7c15ull | 1; }

/// The benchmark's workloads.
enum class WorkloadKind : std::uint8_t {
  kGet,          ///< uniform keys, 100% GET
  kInsertRemove, ///< uniform keys, 50% INSERT, 50% REMOVE
  kMixed,        ///< uniform keys, 80% GET, 10% UPDATE (5% INSERT, 5% REMOVE), 10% RANGE
  kZipfMixed,    ///< the same mix with Zipfian keys (key 1 the most popular)
};

/// "get", "insert-remove", "80-10-10", "zipf-80-10-10".
const char* workload_name(WorkloadKind w);
/// The workload of a name above; nullopt when unknown.
std::optional<WorkloadKind> parse_workload(const std::string& name);
/// A one-line description of the mix, for the result file.
const char* workload_description(WorkloadKind w);
/// Whether the workload draws Zipfian keys (and so runs once per theta).
inline bool is_zipfian(WorkloadKind w) { return w == WorkloadKind::kZipfMixed; }

/// A keyed permutation of [0, n), n >= 1: a 4-round Feistel network over the smallest even
/// number of bits covering n, walking the cycle until the image falls below n.
class Permutation {
 public:
  Permutation(std::uint64_t n, std::uint64_t seed);
  /// The image of x < n (a bijection of [0, n)).
  std::uint64_t operator()(std::uint64_t x) const;

 private:
  std::uint64_t encrypt(std::uint64_t x) const;
  std::uint64_t n_;
  unsigned half_bits_;
  std::uint64_t half_mask_;
  std::uint64_t round_keys_[4];
};

/// The prefill of key range K: the K/2 keys prefill_key(i), i < K/2, distinct and in [1, K].
class Prefill {
 public:
  Prefill(std::uint64_t key_range, std::uint64_t seed) : key_range_(key_range), perm_(key_range, seed) {}
  std::uint64_t size() const { return key_range_ / 2; }
  std::uint64_t key(std::uint64_t i) const { return perm_(i) + 1; }

 private:
  std::uint64_t key_range_;
  Permutation perm_;
};

/// One thread's operations for one run.
struct OpSource {
  WorkloadKind workload = WorkloadKind::kGet;
  std::uint64_t key_range = 0;          ///< keys are drawn from [1, key_range]
  std::uint64_t seed = 0;               ///< the thread's stream; see stream_seed()
  const std::uint64_t* trace = nullptr; ///< Zipfian: keys drawn in advance, cycled
  std::size_t trace_size = 0;           ///< Zipfian: entries of trace, a power of two
};

/// Draws the operations of an OpSource: kind and key, from the thread's SplitMix64 stream and,
/// for Zipfian workloads, the next key of its trace. Cheap and inline (the timed loop calls it).
class OpGen {
 public:
  explicit OpGen(const OpSource& s)
      : rng_(s.seed), w_(s.workload), range_(s.key_range), trace_(s.trace), mask_(s.trace_size - 1) {}
  /// The next operation's kind and key (a RANGE's start).
  void next(OpKind* kind, std::uint64_t* key) {
    const std::uint64_t r = rng_.next();
    switch (w_) {
      case WorkloadKind::kGet: *kind = OpKind::kGet; break;
      case WorkloadKind::kInsertRemove: *kind = (r >> 63) ? OpKind::kInsert : OpKind::kRemove; break;
      case WorkloadKind::kMixed:
      case WorkloadKind::kZipfMixed: {
        const std::uint64_t pick = ((r >> 32) * 100) >> 32;  // uniform in [0, 100)
        *kind = pick < 80 ? OpKind::kGet : pick < 85 ? OpKind::kInsert : pick < 90 ? OpKind::kRemove : OpKind::kRange;
        break;
      }
    }
    if (trace_) *key = trace_[pos_++ & mask_];
    else *key = rng_.below(range_) + 1;
  }

 private:
  kv::Rng rng_;
  WorkloadKind w_;
  std::uint64_t range_;
  const std::uint64_t* trace_;
  std::size_t mask_, pos_ = 0;
};

/// The seed of thread `thread`'s stream for one run of one point. It depends on the point,
/// the run and the thread only (not the system), so every system sees identical streams.
std::uint64_t stream_seed(std::uint64_t base, WorkloadKind w, std::uint64_t key_range, double theta, unsigned run,
                          unsigned thread);

/// Fills *out with n Zipfian keys (rank + 1 of bench/kv's generator, Gray et al.) over
/// [1, key_range] with skew theta, drawn from `seed` (untimed, before a run).
void zipf_trace(std::uint64_t key_range, double theta, std::uint64_t seed, std::size_t n,
                std::vector<std::uint64_t>* out);

}  // namespace duet::bench::lit
