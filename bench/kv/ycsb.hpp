// YCSB-style request generation for `duet bench kv`: a deterministic random source, the key
// distributions (uniform, Zipfian, scrambled Zipfian, latest), the core workloads A, B, C, D, F
// and read/update mixes, and the byte encoding of keys and values.
//
// Zipfian follows Gray et al., "Quickly generating billion-record synthetic databases"
// (SIGMOD '94), as YCSB's ZipfianGenerator does: rank 0 and 1 are drawn exactly, the rest by
// the closed-form approximation n * (eta * u - eta + 1)^(1 / (1 - theta)). It needs
// zeta(n, theta) = sum_{i=1..n} i^-theta; see zeta() for how that is computed for n up to
// 10^9 and beyond in microseconds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>
#include <string_view>

namespace duet::bench::kv {

/// SplitMix64 (Steele, Lea and Flood, 2014): a small, fast 64-bit generator; one per client
/// thread, seeded deterministically, so every run of a configuration draws the same requests.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : s_(seed) {}
  /// The next 64 random bits.
  std::uint64_t next() {
    std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1), 53 bits.
  double next_double() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Uniform in [0, n) for n >= 1 (multiply-high, bias below 2^-64 * n).
  std::uint64_t below(std::uint64_t n) {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }

 private:
  std::uint64_t s_;
};

/// A seed for stream `stream` derived from `seed` (distinct streams for threads and repeats).
std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream);

/// zeta(n, theta) = sum_{i=1..n} i^-theta, for theta >= 0. Summed exactly for n <= 2^16;
/// beyond, the first 1024 terms exactly and the rest by the Euler-Maclaurin formula (integral,
/// end-point term and three derivative corrections), whose error is below 1e-15 relative.
/// Costs at most ~2^16 pow() calls whatever n is.
double zeta(std::uint64_t n, double theta);

/// sum_{i=from+1..to} i^-theta (0 when to <= from): what zeta grows by when items are added.
double zeta_delta(std::uint64_t from, std::uint64_t to, double theta);

/// Ranks 0..items-1 with P(rank r) proportional to 1 / (r + 1)^theta (0 <= theta < 1).
/// Copyable; copies share nothing. grow() adds items keeping zeta current incrementally (as
/// YCSB does for its latest distribution).
class ZipfianGenerator {
 public:
  /// items >= 1, 0 <= theta < 1 (checked by the option parser; asserted here).
  ZipfianGenerator(std::uint64_t items, double theta);
  /// A rank in [0, items), 0 the most popular.
  std::uint64_t next(Rng& rng) const;
  /// Extends the range to `items` (no effect when not larger than the current count).
  void grow(std::uint64_t items);
  /// The number of ranks drawn from.
  std::uint64_t items() const { return items_; }
  /// The skew parameter.
  double theta() const { return theta_; }
  /// zeta(items, theta), kept current by grow().
  double zetan() const { return zetan_; }
  /// The exact probability of `rank` under the Zipf law the generator approximates.
  double probability(std::uint64_t rank) const;

 private:
  void update_eta();

  std::uint64_t items_;
  double theta_, alpha_, zeta2_, zetan_, eta_ = 0, half_pow_theta_;
};

/// 64-bit FNV-1a over the eight little-endian bytes of x (YCSB's fnvhash64 scrambling).
std::uint64_t fnv1a64(std::uint64_t x);

/// How request keys are drawn.
enum class Distribution : std::uint8_t {
  kUniform = 0,    ///< every key of the range equally likely
  kZipfian = 1,    ///< key number = Zipf rank: key 0 hottest, key 1 next, ...
  kScrambled = 2,  ///< Zipf rank scattered over the range by fnv1a64 (YCSB's "zipfian")
  kLatest = 3,     ///< Zipfian over inserted keys, the most recently inserted hottest
};

/// "uniform", "zipfian", "scrambled", "latest".
const char* distribution_name(Distribution d);
/// Parses a distribution name; nullopt when unknown.
std::optional<Distribution> parse_distribution(std::string_view s);

/// Draws key numbers for one client thread. The range is [0, key_range); latest draws from
/// [0, inserted) where `inserted` is passed to each call. A popularity shift moves the
/// hottest `shift_span` ranks of zipfian/scrambled: rank r < span maps to (r + shift) mod span.
class KeyChooser {
 public:
  /// theta is used by zipfian, scrambled and latest; zipf_hint may carry a precomputed
  /// generator for (key_range, theta) so that threads do not each compute zeta.
  KeyChooser(Distribution d, std::uint64_t key_range, double theta, std::uint64_t inserted,
             const ZipfianGenerator* zipf_hint = nullptr);
  /// The next key number; `inserted` is how many keys exist for latest (ignored otherwise).
  std::uint64_t next(Rng& rng, std::uint64_t inserted);
  /// Sets the popularity shift (shift < span <= key_range; span 0 turns it off).
  void set_shift(std::uint64_t shift, std::uint64_t span) { shift_ = shift, span_ = span; }
  /// Zipfian and scrambled: draw `n` ranks (a power of two) up front, at the first next(), and
  /// then cycle through them, so that a measured run does not spend its time in pow() (one per
  /// Zipfian draw). 0 (the default) draws every rank on demand.
  void use_trace(std::size_t n) { trace_size_ = n; }

 private:
  std::uint64_t zipf_rank(Rng& rng);
  std::uint64_t rank_to_key(std::uint64_t r) const { return r < span_ ? (r + shift_) % span_ : r; }

  Distribution d_;
  std::uint64_t range_;
  ZipfianGenerator zipf_;
  std::uint64_t shift_ = 0, span_ = 0;
  std::size_t trace_size_ = 0, trace_pos_ = 0;
  std::vector<std::uint64_t> trace_;
};

/// What one generated operation does.
enum class OpKind : std::uint8_t {
  kRead = 0,    ///< GET an existing-range key
  kUpdate = 1,  ///< PUT a new value to a key of the distribution
  kInsert = 2,  ///< PUT a fresh key (next unused key number)
  kRmw = 3,     ///< GET a key, then PUT a value derived from what was read (next batch)
};

/// A workload: the share of each operation kind (summing to 1) and its usual distribution.
struct Workload {
  std::string name;  ///< "ycsb-a" .. "ycsb-f", or "rw95" for a read/update mix
  double read = 1, update = 0, insert = 0, rmw = 0;
  Distribution default_distribution = Distribution::kZipfian;
  /// The kind of the next operation, from one uniform draw.
  OpKind pick(Rng& rng) const {
    const double u = rng.next_double();
    if (u < read) return OpKind::kRead;
    if (u < read + update) return OpKind::kUpdate;
    if (u < read + update + insert) return OpKind::kInsert;
    return rmw > 0 ? OpKind::kRmw : OpKind::kRead;
  }
};

/// YCSB core workload "A", "B", "C", "D" or "F" (case-insensitive); nullopt otherwise.
/// A 50/50 read/update, B 95/5 read/update, C read only, D 95/5 read/insert with latest,
/// F 50/50 read/read-modify-write.
std::optional<Workload> ycsb_workload(std::string_view letter);
/// A read/update mix with read_percent% reads (0..100), named "rw<percent>".
Workload read_update_mix(double read_percent);

/// Key bytes of key number k (< 2^56): 8 bytes big-endian, so the first byte is 0 and the
/// store keeps the key inline.
inline void encode_key(std::uint64_t k, char out[8]) {
  for (int i = 7; i >= 0; --i, k >>= 8) out[i] = static_cast<char>(k & 0xff);
}
/// The key number of an 8-byte key (inverse of encode_key).
std::uint64_t decode_key(std::string_view key);

/// Writes a value of `bytes` (>= 8) printable bytes for key number k: a 4-byte tag derived
/// from k, a 4-byte version, then a filler pattern. 8-byte values start with a byte in
/// 0x30..0x6f, so the store keeps them inline.
void encode_value(std::uint64_t k, std::uint64_t version, char* out, std::size_t bytes);
/// Whether v could have been written by encode_value for key k (length >= 8 and tag match).
bool value_matches_key(std::string_view v, std::uint64_t k);
/// The version field of a value written by encode_value (0 for a malformed value).
std::uint64_t value_version(std::string_view v);

}  // namespace duet::bench::kv
