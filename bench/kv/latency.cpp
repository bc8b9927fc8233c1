#include "latency.hpp"

#include <algorithm>
#include <cmath>

namespace duet::bench::kv {

void LatencyHistogram::merge(const LatencyHistogram& o) {
  for (unsigned i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
  count_ += o.count_;
  sum_ns_ += o.sum_ns_;
  max_ns_ = std::max(max_ns_, o.max_ns_);
}

void LatencyHistogram::clear() { *this = LatencyHistogram(); }

void LatencyHistogram::bounds_of(unsigned i, double* lo, double* width) {
  if (i < kLinear) {
    *lo = i;
    *width = 1;
    return;
  }
  const unsigned j = i - kLinear;
  const unsigned e = j / (1u << kSubBits) + kSubBits + 1;
  const unsigned sub = j % (1u << kSubBits);
  *width = std::ldexp(1.0, static_cast<int>(e - kSubBits));
  *lo = ((1u << kSubBits) + sub) * *width;
}

double LatencyHistogram::quantile_ns(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // The rank of the sample wanted (1-based), as in the nearest-rank method.
  const auto rank = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_))));
  std::uint64_t seen = 0;
  for (unsigned i = 0; i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      double lo = 0, width = 0;
      bounds_of(i, &lo, &width);
      const double mid = width <= 1 ? lo : lo + width / 2;
      return std::min(mid, static_cast<double>(max_ns_));
    }
  }
  return static_cast<double>(max_ns_);
}

}  // namespace duet::bench::kv
