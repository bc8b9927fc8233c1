// The Router's pieces on their own: the histogram model's hot rule, its similarity measure,
// and the striped epoch gate that a model switch drains (sched/epoch_gate.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "kv/router.hpp"
#include "sched/epoch_gate.hpp"
#include "sched/striped_shared_mutex.hpp"

namespace duet::kv {
namespace {

using sched::EpochGate;

/// A key that falls in bin b of `bins` (searching small integers).
std::uint64_t key_in_bin(std::uint32_t b, std::uint32_t bins) {
  for (std::uint64_t k = 0;; ++k)
    if (bin_of(k, bins) == b) return k;
}

TEST(ShadowCounts, SampleManyCountsEveryKeyOnceAndTakeZeroes) {
  ShadowCounts counts(1000);
  std::vector<std::uint64_t> keys;
  for (std::uint64_t k = 0; k < 300; ++k) keys.push_back(k % 7 == 0 ? 42 : k * 977);
  std::vector<std::uint32_t> want(1000, 0);
  for (std::uint64_t k : keys) ++want[bin_of(k, 1000)];
  for (std::size_t at = 0; at < keys.size(); at += ShadowCounts::kManyMax)
    counts.sample_many(keys.data() + at, std::min(ShadowCounts::kManyMax, keys.size() - at));
  EXPECT_EQ(counts.take(), want);
  EXPECT_EQ(counts.take(), std::vector<std::uint32_t>(1000, 0));
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

// The Hot Cache's writers hold its table shared and growth holds it exclusively: while the
// exclusive holder runs, no shared holder may be inside, and every shared holder that entered
// gets in eventually. Shared holders count themselves in; the exclusive one checks the count
// and writes a plain variable that the shared ones read (a race ThreadSanitizer would report
// if the exclusion failed).
TEST(StripedSharedMutex, ExclusiveHolderExcludesSharedHolders) {
  sched::StripedSharedMutex m;
  std::atomic<int> inside{0};
  std::atomic<bool> stop{false};
  std::uint64_t plain = 0;  // written only under the exclusive hold
  std::atomic<std::uint64_t> shared_entries{0}, seen_sum{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t)
    readers.emplace_back([&] {
      while (!stop.load()) {
        std::shared_lock<sched::StripedSharedMutex> lk(m);
        inside.fetch_add(1);
        seen_sum.fetch_add(plain, std::memory_order_relaxed);
        inside.fetch_sub(1);
        shared_entries.fetch_add(1, std::memory_order_relaxed);
      }
    });
  int violations = 0;
  for (int round = 0; round < 200; ++round) {
    std::unique_lock<sched::StripedSharedMutex> lk(m);
    if (inside.load() != 0) ++violations;
    ++plain;
    std::this_thread::yield();
    if (inside.load() != 0) ++violations;
  }
  // Shared holders keep getting in between exclusive holds.
  const std::uint64_t before = shared_entries.load();
  while (shared_entries.load() < before + 100) std::this_thread::yield();
  stop.store(true);
  for (auto& r : readers) r.join();
  EXPECT_EQ(violations, 0);
  EXPECT_EQ(plain, 200u);
}

TEST(EpochGate, DrainWaitsForHoldsReleasedOnAnotherThread) {
  EpochGate gate;
  const EpochGate::Ticket t = gate.enter();
  const std::uint64_t e = t.epoch;
  gate.hold(t);   // a request group's hold
  gate.leave(t);  // routing done
  gate.advance();
  std::thread releaser([&] { gate.leave(t); });  // the store's thread releases the group
  gate.drain(e);  // returns only once the hold is gone
  releaser.join();
  EXPECT_EQ(gate.enter().epoch, e + 1);
}

// The interleaving that let a switch evict a dirty Hot Cache entry: drain() reads the stripes
// one by one; between its read of the batch's stripe and the rest, the batch sends a request
// group, the store's thread (another stripe) runs and releases it, and the batch goes on
// routing with the old model. drain() must not return while the batch is still inside. The
// scan's hook plays both parts at fixed points, so the interleaving is the same every run: on
// the first scan the group comes and goes; on a later scan the batch finishes routing.
TEST(EpochGate, DrainDoesNotReturnWhileABatchRoutesAndItsGroupIsReleasedMidScan) {
  EpochGate gate;
  const EpochGate::Ticket batch = gate.enter();  // the batch starts routing with model e
  const std::uint64_t e = batch.epoch;
  gate.advance();                                  // a switch installs e + 1
  bool batch_inside = true;
  unsigned scans = 0;
  auto after_stripe = [&](unsigned i) {
    if (i != batch.stripe) return;
    ++scans;
    if (scans == 1) {
      gate.hold(batch);  // the batch sends its cold group...
      std::thread store_thread([&] { gate.leave(batch); });  // ...which the store runs and releases
      store_thread.join();
    } else if (scans == 2) {
      batch_inside = false;  // the batch finishes routing
      gate.leave(batch);
    }
  };
  gate.drain(e, after_stripe);
  EXPECT_FALSE(batch_inside) << "drain() returned while a batch of the old epoch was still routing";
  EXPECT_GE(scans, 2u);
}

}  // namespace
}  // namespace duet::kv
