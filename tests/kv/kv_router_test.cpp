// The Router's pieces on their own: the histogram model's hot rule, its similarity measure,
// and the striped epoch gate.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "kv/router.hpp"

namespace duet::kv {
namespace {

/// A key that falls in bin b of `bins` (searching small integers).
std::uint64_t key_in_bin(std::uint32_t b, std::uint32_t bins) {
  for (std::uint64_t k = 0;; ++k)
    if (bin_of(k, bins) == b) return k;
}

TEST(HistogramModel, ABinNeedsItsShareAndAtLeastFourSamples) {
  constexpr std::uint32_t kBins = 64;
  std::vector<std::uint32_t> counts(kBins, 0);
  counts[3] = 1;    // one sample: noise, even though 1 / total is far above the threshold
  counts[7] = 3;    // three: still too few
  counts[9] = 40;   // popular
  counts[11] = 4;   // four samples and above the threshold
  const HistogramModel m(counts, 1e-6);
  EXPECT_FALSE(m.hot(key_in_bin(3, kBins)));
  EXPECT_FALSE(m.hot(key_in_bin(7, kBins)));
  EXPECT_TRUE(m.hot(key_in_bin(9, kBins)));
  EXPECT_TRUE(m.hot(key_in_bin(11, kBins)));
  EXPECT_EQ(m.hot_units(), 2u);
}

TEST(HistogramModel, ThresholdZeroMakesEverySampledBinHotAndOneMakesNothingHot) {
  std::vector<std::uint32_t> counts(16, 0);
  counts[1] = 1;
  counts[2] = 100;
  EXPECT_EQ(HistogramModel(counts, 0.0).hot_units(), 2u);
  EXPECT_EQ(HistogramModel(counts, 1.0).hot_units(), 0u);
  EXPECT_EQ(HistogramModel(16, 0.5).hot_units(), 0u);  // untrained
}

TEST(HistogramModel, SimilarityWeighsBinsByTraffic) {
  std::vector<std::uint32_t> a(64, 0), b(64, 0);
  a[1] = b[1] = 1000;  // the same heavy bin in both
  a[2] = 5;            // a light bin only the first calls hot
  const HistogramModel ma(a, 1e-3), mb(b, 1e-3);
  EXPECT_GT(ma.similarity(mb), 0.99);
  std::vector<std::uint32_t> c(64, 0);
  c[5] = 1000;  // a different heavy bin
  const HistogramModel mc(c, 1e-3);
  EXPECT_LT(mc.similarity(ma), 0.01);
  EXPECT_EQ(ma.similarity(ConstantModel(true)), 0.0);
}

TEST(EpochGate, DrainWaitsForHoldsReleasedOnAnotherThread) {
  EpochGate gate;
  const std::uint64_t e = gate.enter();
  gate.hold(e);   // a request group's hold
  gate.leave(e);  // routing done
  gate.advance();
  std::thread releaser([&] { gate.leave(e); });  // the store's thread releases the group
  gate.drain(e);  // returns only once the hold is gone
  releaser.join();
  EXPECT_EQ(gate.enter(), e + 1);
}

}  // namespace
}  // namespace duet::kv
