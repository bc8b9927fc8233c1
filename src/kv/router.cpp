#include "kv/router.hpp"

#include <algorithm>
#include <bit>
#include <functional>
#include <sstream>
#include <thread>

#include "cods/atomic.hpp"
#include "common/check.hpp"

namespace duet::kv {

namespace {
constexpr double kMinHotSamples = 4;
}  // namespace


ShadowCounts::ShadowCounts(std::uint32_t bins)
    : bins_(bins), counts_(std::make_unique<std::atomic<std::uint32_t>[]>(bins)) {
  for (std::uint32_t i = 0; i < bins_; ++i) counts_[i].store(0, std::memory_order_relaxed);
}

std::vector<std::uint32_t> ShadowCounts::take() {
  std::vector<std::uint32_t> out(bins_);
  for (std::uint32_t i = 0; i < bins_; ++i) out[i] = counts_[i].exchange(0, std::memory_order_relaxed);
  approximate_.store(0, std::memory_order_relaxed);
  return out;
}

HistogramModel::HistogramModel(std::uint32_t bins, double threshold)
    : bins_(bins), threshold_(threshold), bits_((bins + 63) / 64, 0) {}

HistogramModel::HistogramModel(const std::vector<std::uint32_t>& counts, double threshold)
    : HistogramModel(static_cast<std::uint32_t>(counts.size()), threshold) {
  std::uint64_t total = 0;
  for (std::uint32_t c : counts) total += c;
  counts_ = counts;
  total_ = total;
  if (total == 0 || threshold >= 1.0) return;
  // With a positive threshold a bin also needs kMinHotSamples samples: when threshold * total
  // is below one sample, any bin sampled once would pass, and that is noise, not popularity.
  const double cut = std::max(threshold * static_cast<double>(total), threshold > 0 ? kMinHotSamples - 0.5 : 0.0);
  for (std::uint32_t b = 0; b < bins_; ++b) {
    if (static_cast<double>(counts[b]) > cut) {
      bits_[b >> 6] |= std::uint64_t(1) << (b & 63);
      ++hot_bins_;
    }
  }
}

std::string HistogramModel::describe() const {
  std::ostringstream o;
  o << "histogram(bins=" << bins_ << ", threshold=" << threshold_ << ", hot_bins=" << hot_bins_ << ")";
  return o.str();
}

double HistogramModel::similarity(const RouterModel& other) const {
  const auto* h = dynamic_cast<const HistogramModel*>(&other);
  if (!h || h->bins_ != bins_) return 0.0;
  if (total_ == 0) return bits_ == h->bits_ ? 1.0 : 0.0;
  auto mass = [&](std::size_t w, std::uint64_t x) {
    std::uint64_t m = 0;
    for (; x; x &= x - 1) m += counts_[w * 64 + static_cast<unsigned>(std::countr_zero(x))];
    return m;
  };
  std::uint64_t differ = 0, either = 0;
  for (std::size_t w = 0; w < bits_.size(); ++w) {
    differ += mass(w, bits_[w] ^ h->bits_[w]);
    either += mass(w, bits_[w] | h->bits_[w]);
  }
  return either == 0 ? 1.0 : 1.0 - static_cast<double>(differ) / static_cast<double>(either);
}

}  // namespace duet::kv
