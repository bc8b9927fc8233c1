// KVCG's Router (seed sections 2.6-2.7): a model that classifies index keys as hot or cold and
// a shadow model trained from sampled requests while the live one serves. The gate that tells a
// model switch when every request routed under the old model has finished is sched::EpochGate
// (sched/epoch_gate.hpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace duet::kv {

/// A routing model. Implementations are immutable once built, so any thread may call hot().
class RouterModel {
 public:
  virtual ~RouterModel() = default;
  /// True when requests for ikey should go to the Hot Cache. Must be cheap (a few ns).
  virtual bool hot(std::uint64_t ikey) const = 0;
  /// For INFO and logs, e.g. "histogram(bins=1048576, threshold=0.0001, hot_bins=12)".
  virtual std::string describe() const = 0;
  /// Units (bins) classified hot; 0 promises that hot() is false for every key (the router
  /// then skips the per-request lookup).
  virtual std::uint64_t hot_units() const = 0;
  /// Agreement in [0, 1] with another model (1: identical). For the histogram: of this
  /// model's training requests that either model routes hot, the share both route alike, so
  /// bins near the threshold that flip on sampling noise alone barely count. Used to skip
  /// switches that would change little.
  virtual double similarity(const RouterModel& other) const = 0;
};

/// Every key hot (kAllHot) or every key cold (kAllCold).
class ConstantModel final : public RouterModel {
 public:
  explicit ConstantModel(bool hot) : hot_(hot) {}
  bool hot(std::uint64_t) const override { return hot_; }
  std::string describe() const override { return hot_ ? "all-hot" : "all-cold"; }
  std::uint64_t hot_units() const override { return hot_ ? 1 : 0; }
  double similarity(const RouterModel& o) const override { return o.describe() == describe() ? 1.0 : 0.0; }

 private:
  bool hot_;
};

/// The bin of an index key among `bins` bins (a hash, so popular keys spread over bins).
inline std::uint32_t bin_of(std::uint64_t ikey, std::uint32_t bins) {
  std::uint64_t x = ikey * 0x9E3779B97F4A7C15ULL;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 32;
  return static_cast<std::uint32_t>((static_cast<unsigned __int128>(x) * bins) >> 64);
}

/// Access counts per bin, sampled from live requests (the shadow model's training data).
/// Samples are relaxed atomic adds; thread-safe.
class ShadowCounts {
 public:
  explicit ShadowCounts(std::uint32_t bins);
  /// Adds one sample per key (at most kManyMax keys): computes every bin, prefetches the
  /// counters, then adds. Each locked add waits for its counter's line, and the counters (4 MiB
  /// at the default bin count) miss the caches, so adding one at a time serialized those
  /// misses; here they overlap.
  void sample_many(const std::uint64_t* ikeys, std::size_t n) {
    std::uint32_t b[kManyMax];
    for (std::size_t i = 0; i < n; ++i) {
      b[i] = bin_of(ikeys[i], bins_);
      __builtin_prefetch(&counts_[b[i]], 1);
    }
    for (std::size_t i = 0; i < n; ++i) counts_[b[i]].fetch_add(1, std::memory_order_relaxed);
    thread_local std::uint32_t unflushed = 0;
    unflushed += static_cast<std::uint32_t>(n);
    if (unflushed >= kFlushEvery) {
      approximate_.fetch_add(unflushed, std::memory_order_relaxed);
      unflushed = 0;
    }
  }
  static constexpr std::size_t kManyMax = 64;
  /// Samples since the last take(), give or take kFlushEvery per sampling thread; O(1).
  std::uint64_t approximate_total() const { return approximate_.load(std::memory_order_relaxed); }
  /// Copies the counts and zeroes them.
  std::vector<std::uint32_t> take();
  std::uint32_t bins() const { return bins_; }

 private:
  static constexpr std::uint32_t kFlushEvery = 256;
  std::uint32_t bins_;
  std::unique_ptr<std::atomic<std::uint32_t>[]> counts_;
  std::atomic<std::uint64_t> approximate_{0};
};

/// The histogram model: a bin is hot when its share of the sampled requests exceeds the
/// threshold and (for a positive threshold) it holds at least 4 samples, so that a short
/// training run does not mark every bin it sampled once. Classification is a hash, a
/// multiply-shift and a bit test.
class HistogramModel final : public RouterModel {
 public:
  /// Builds from counts (one per bin). A threshold >= 1 makes nothing hot.
  HistogramModel(const std::vector<std::uint32_t>& counts, double threshold);
  /// An untrained model: nothing is hot.
  HistogramModel(std::uint32_t bins, double threshold);
  bool hot(std::uint64_t ikey) const override {
    const std::uint32_t b = bin_of(ikey, bins_);
    return (bits_[b >> 6] >> (b & 63)) & 1;
  }
  std::string describe() const override;
  std::uint64_t hot_units() const override { return hot_bins_; }
  double similarity(const RouterModel& other) const override;
  /// The per-bin counts it was built from (empty when untrained).
  const std::vector<std::uint32_t>& training_counts() const { return counts_; }

 private:
  std::uint32_t bins_;
  double threshold_;
  std::uint64_t hot_bins_ = 0;
  std::vector<std::uint64_t> bits_;
  std::vector<std::uint32_t> counts_;  ///< the training counts (empty when untrained)
  std::uint64_t total_ = 0;
};

}  // namespace duet::kv
