// The CPU twin and the GPU map must give identical outcomes for the same batch sequence.
// Batches hold distinct keys so the outcome does not depend on the order inside a batch.
// Skipped, visibly, where no GPU is present.
#include <gtest/gtest.h>

#include <random>
#include <unordered_set>

#include "gpu/device.hpp"
#include "unit/lslab_helpers.hpp"

using namespace duet::lslab;
using namespace duet::lslab::testing;

class LSlabTwins : public ::testing::TestWithParam<std::tuple<unsigned, Placement>> {};

TEST_P(LSlabTwins, CpuAndGpuAgreeOnTheSameBatchSequence) {
  if (!duet::gpu::device().present) GTEST_SKIP() << "no GPU: " << duet::gpu::device().reason;
  Config c;
  c.expected_keys = 1 << 14;
  c.load_factor = 0.9;
  c.initial_pool_slabs = 256;  // force growth on both
  c.placement = std::get<1>(GetParam());
  std::unique_ptr<Map> gpu;
  duet::Status s = make_gpu_map(c, &gpu, std::get<0>(GetParam()));
  ASSERT_TRUE(s.ok()) << s.to_string();
  auto cpu = cpu_map(c, 8);
  std::mt19937_64 rng(7);
  std::uint64_t value = 1;
  for (int round = 0; round < 60; ++round) {
    OwnedBatch b;
    std::unordered_set<std::uint64_t> used;
    const std::size_t n = 1 + rng() % 20000;
    while (b.size() < n) {
      const std::uint64_t key = rng() % 40000;
      if (!used.insert(key).second) continue;
      const unsigned r = rng() % 10;
      b.add(r < 5 ? Op::kPut : r < 8 ? Op::kGet : Op::kDelete, key, value++);
    }
    if (round == 7) b.add(Op::kGet, kReservedKey);
    OwnedBatch b2 = b;
    ASSERT_TRUE(b.run(*cpu).ok());
    s = b2.run(*gpu);
    ASSERT_TRUE(s.ok()) << s.to_string();
    for (std::size_t i = 0; i < b.size(); ++i) {
      ASSERT_EQ(b.status[i], b2.status[i]) << "round " << round << " request " << i;
      ASSERT_EQ(b.out[i], b2.out[i]) << "round " << round << " request " << i;
    }
  }
  EXPECT_GT(gpu->stats().pool_grows, 0u);
}

INSTANTIATE_TEST_SUITE_P(WidthAndPlacement, LSlabTwins,
                         ::testing::Combine(::testing::Values(8u, 16u, 32u),
                                            ::testing::Values(Placement::kDevice, Placement::kManaged)),
                         [](const auto& info) {
                           return "w" + std::to_string(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) == Placement::kDevice ? "_device" : "_managed");
                         });
