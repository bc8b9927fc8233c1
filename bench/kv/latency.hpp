// A fixed-size latency histogram: exact below 64 ns, then 32 linear sub-buckets per power of
// two (every bucket at most 1/32 of its value wide, so a reported percentile is within about
// 1.6% of the true one). Adding is a few instructions; histograms of threads merge by adding.
#pragma once

#include <array>
#include <cstdint>

namespace duet::bench::kv {

class LatencyHistogram {
 public:
  /// Records one latency in nanoseconds (values past ~39 hours land in the last bucket).
  void add(std::uint64_t ns) {
    ++counts_[index_of(ns)];
    ++count_;
    sum_ns_ += ns;
    if (ns > max_ns_) max_ns_ = ns;
  }
  /// Adds every sample of `o`.
  void merge(const LatencyHistogram& o);
  /// Forgets every sample.
  void clear();

  /// Samples recorded.
  std::uint64_t count() const { return count_; }
  /// The largest sample, in ns (0 when empty).
  std::uint64_t max_ns() const { return max_ns_; }
  /// Mean latency in ns (0 when empty).
  double mean_ns() const { return count_ ? static_cast<double>(sum_ns_) / static_cast<double>(count_) : 0.0; }
  /// The q-quantile (0 < q <= 1) in ns: the midpoint of the bucket holding it, capped at the
  /// largest sample; 0 when empty.
  double quantile_ns(double q) const;

 private:
  static constexpr unsigned kSubBits = 5;                     // 32 sub-buckets per octave
  static constexpr unsigned kLinear = 2u << kSubBits;          // 0..63 exact
  static constexpr unsigned kTopExponent = 47;                 // 2^47 ns ~ 39 hours
  static constexpr unsigned kBuckets = kLinear + (kTopExponent - kSubBits) * (1u << kSubBits);

  static unsigned index_of(std::uint64_t ns) {
    if (ns < kLinear) return static_cast<unsigned>(ns);
    unsigned e = 63u - static_cast<unsigned>(__builtin_clzll(ns));  // >= kSubBits + 1
    if (e >= kTopExponent) return kBuckets - 1;
    const unsigned sub = static_cast<unsigned>(ns >> (e - kSubBits)) & ((1u << kSubBits) - 1);
    return kLinear + (e - kSubBits - 1) * (1u << kSubBits) + sub;
  }
  /// The lower bound and width of bucket i, in ns.
  static void bounds_of(unsigned i, double* lo, double* width);

  std::array<std::uint64_t, kBuckets> counts_{};
  std::uint64_t count_ = 0, sum_ns_ = 0, max_ns_ = 0;
};

}  // namespace duet::bench::kv
