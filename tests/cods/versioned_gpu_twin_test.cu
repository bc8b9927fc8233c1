// The CODS versioned B-link tree's GPU batch driver (src/index/cods/gpu_versioned.cu) against its
// CPU twin (versioned_cpu.hpp): the same batches on both, every outcome compared exactly,
// RANGE pages included. Within a batch each point request has a key of its own, so outcomes do
// not depend on the GPU's order; RANGEs read the state before the batch on both, so they may
// overlap the batch's updates. Also: RANGEs at snapshots held across batches, saved versions
// recycled by the pool, a pool that grows
// within batches (RANGE batches among them) changes no outcome, a pool too small to grow enough
// leaves nothing half applied, and bad input; on tiles, on one lane per request and in mixed mode
// (reads on tiles, updates on lanes). Skipped, visibly, without a GPU (the configuration
// checks run without one).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

// The CPU twin runs the DUET_HD algorithm with a host-only environment (CpuEnv); nvcc warns
// about every such host instantiation although none of them is compiled for the device.
#pragma nv_diag_suppress 20014

#include <algorithm>
#include <cstdint>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "gpu/device.hpp"
#include "index/cods/gpu_versioned.hpp"
#include "index/cods/versioned_cpu.hpp"

namespace duet::cods::ds {
namespace {

#define SKIP_WITHOUT_GPU() \
  if (!duet::gpu::device().present) GTEST_SKIP() << "no GPU: " << duet::gpu::device().reason

constexpr std::uint64_t kLimit = 24;

/// The CPU twin, with snapshots held by index (hold() returns the next index).
struct VTwin {
  virtual ~VTwin() = default;
  virtual Status execute(const Batch& b, VersionedBatchResult& r) = 0;
  virtual std::size_t hold() = 0;
  virtual void release(std::size_t i) = 0;
  virtual Status execute_at(std::size_t i, const Batch& b, VersionedBatchResult& r) = 0;
};
template <unsigned K, Regime R>
struct VTwinOf final : VTwin {
  CpuVersionedBLinkTree<K, R> t;
  std::unique_ptr<CpuEnv> env = t.session();
  std::vector<typename CpuVersionedBLinkTree<K, R>::Snapshot> held;
  Status execute(const Batch& b, VersionedBatchResult& r) override { return t.execute(*env, b, r); }
  std::size_t hold() override {
    held.push_back(t.snapshot());
    return held.size() - 1;
  }
  void release(std::size_t i) override { held[i].release(); }
  Status execute_at(std::size_t i, const Batch& b, VersionedBatchResult& r) override {
    return t.execute(*env, b, r, &held[i]);
  }
};
std::unique_ptr<VTwin> twin_for(const GpuVersionedConfig& c) {
  const bool fa = c.regime == Regime::kFullyAtomic;
  if (c.keys_per_node == 14)
    return fa ? std::unique_ptr<VTwin>(new VTwinOf<14, Regime::kFullyAtomic>())
              : std::unique_ptr<VTwin>(new VTwinOf<14, Regime::kElementwise>());
  return fa ? std::unique_ptr<VTwin>(new VTwinOf<30, Regime::kFullyAtomic>())
            : std::unique_ptr<VTwin>(new VTwinOf<30, Regime::kElementwise>());
}

struct Shape {
  const char* name;
  unsigned k, g;
  Regime regime;
  GpuMode mode = GpuMode::kGroup;
};
std::ostream& operator<<(std::ostream& o, const Shape& s) { return o << s.name; }

/// One batch's arrays and outcomes.
struct Work {
  std::vector<Op> ops;
  std::vector<std::uint64_t> keys, values;
  std::vector<OpStatus> status;
  std::vector<std::uint64_t> out, rk, rv;
  VersionedBatchResult result() {
    status.assign(ops.size(), OpStatus::kInvalid);
    out.assign(ops.size(), 0);
    rk.assign(ops.size() * kLimit, 0);
    rv.assign(ops.size() * kLimit, 0);
    return {status.data(), out.data(), rk.data(), rv.data(), kLimit};
  }
  Batch batch() const { return {ops.data(), keys.data(), values.data(), ops.size()}; }
};

/// A batch of n requests over keys [0, range): point requests on distinct keys, `range_pct`% RANGEs.
Work make_batch(std::mt19937_64& rng, std::uint64_t n, std::uint64_t range, unsigned range_pct) {
  std::vector<std::uint64_t> pool(range);
  for (std::uint64_t i = 0; i < range; ++i) pool[i] = i * 7 + 3;  // spaced, so RANGE bounds fall between keys
  std::shuffle(pool.begin(), pool.end(), rng);
  Work w;
  for (std::uint64_t i = 0; i < n; ++i) {
    const unsigned what = static_cast<unsigned>(rng() % 100);
    if (what < range_pct) {
      const std::uint64_t a = rng() % (range * 7), b = a + rng() % 600;
      w.ops.push_back(kOpRange);
      w.keys.push_back(a);
      w.values.push_back(b);
      continue;
    }
    w.keys.push_back(pool[i]);
    if (what < range_pct + 45) {
      w.ops.push_back(Op::kInsert);
      w.values.push_back(rng());
    } else if (what < range_pct + 70) {
      w.ops.push_back(Op::kRemove);
      w.values.push_back(0);
    } else {
      w.ops.push_back(Op::kGet);
      w.values.push_back(0);
    }
  }
  return w;
}

/// Compares the GPU's outcomes with the twin's; returns the number of differences (reports 5).
int compare(const Work& g, const Work& c, int batch) {
  int diffs = 0;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    bool same = g.status[i] == c.status[i] && g.out[i] == c.out[i];
    if (same && g.ops[i] == kOpRange)
      for (std::uint64_t r = 0; r < std::min(g.out[i], kLimit); ++r)
        same = same && g.rk[i * kLimit + r] == c.rk[i * kLimit + r] && g.rv[i * kLimit + r] == c.rv[i * kLimit + r];
    if (!same && ++diffs <= 5)
      ADD_FAILURE() << "batch " << batch << " request " << i << " op " << int(g.ops[i]) << " key " << g.keys[i]
                    << ": gpu " << int(g.status[i]) << "/" << g.out[i] << ", cpu " << int(c.status[i]) << "/"
                    << c.out[i];
  }
  return diffs;
}

/// The driver's configuration for a shape, with a pool of `pool_nodes` nodes at first.
GpuVersionedConfig config_of(const Shape& s, std::uint64_t pool_nodes) {
  GpuVersionedConfig c;
  c.keys_per_node = s.k;
  c.group = s.g;
  c.mode = s.mode;
  c.regime = s.regime;
  c.pool_nodes = pool_nodes;
  return c;
}

class CodsVersionedGpuTwin : public ::testing::TestWithParam<Shape> {};

TEST_P(CodsVersionedGpuTwin, SameOutcomesAsTheCpuTwin) {
  SKIP_WITHOUT_GPU();
  const Shape s = GetParam();
  const GpuVersionedConfig c = config_of(s, 1 << 16);
  std::unique_ptr<GpuVersionedTree> gpu;
  ASSERT_TRUE(make_gpu_versioned_tree(c, &gpu).ok());
  auto cpu = twin_for(c);
  std::mt19937_64 rng(42 + s.k);
  std::uint64_t ranges = 0, nonempty = 0;
  for (int b = 0; b < 30; ++b) {
    // Fill first (no RANGEs: nothing saved), then mixed batches with RANGEs.
    Work g = make_batch(rng, 1000 + rng() % 2000, 4000, b < 4 ? 0 : 15);
    if (b < 4)
      for (auto& op : g.ops) op = Op::kInsert;
    Work cw = g;
    VersionedBatchResult gr = g.result(), cr = cw.result();
    ASSERT_TRUE(gpu->execute(g.batch(), gr).ok()) << "batch " << b;
    ASSERT_TRUE(cpu->execute(cw.batch(), cr).ok());
    ASSERT_EQ(compare(g, cw, b), 0);
    for (std::size_t i = 0; i < g.ops.size(); ++i)
      if (g.ops[i] == kOpRange) ++ranges, nonempty += g.out[i] > 0;
  }
  EXPECT_GT(ranges, 1000u);
  EXPECT_GT(nonempty, ranges / 2) << "ranges should mostly find keys";
  EXPECT_GT(gpu->nodes_recycled(), 0u) << "saved versions are cut and recycled";
}

INSTANTIATE_TEST_SUITE_P(Shapes, CodsVersionedGpuTwin,
                         ::testing::Values(Shape{"fa_k14_g16", 14, 16, Regime::kFullyAtomic},
                                           Shape{"ew_k14_g16", 14, 16, Regime::kElementwise},
                                           Shape{"fa_k30_g32", 30, 32, Regime::kFullyAtomic},
                                           Shape{"fa_k14_g1", 14, 1, Regime::kFullyAtomic},
                                           Shape{"ew_k30_g1", 30, 1, Regime::kElementwise},
                                           Shape{"fa_k14_g16_mixed", 14, 16, Regime::kFullyAtomic, GpuMode::kMixed},
                                           Shape{"ew_k14_g16_mixed", 14, 16, Regime::kElementwise, GpuMode::kMixed},
                                           Shape{"fa_k30_g32_mixed", 30, 32, Regime::kFullyAtomic, GpuMode::kMixed}),
                         [](const ::testing::TestParamInfo<Shape>& i) { return std::string(i.param.name); });

/// A pool of 16 nodes that starts the tree and may grow: a batch of 100 inserts, then batches of
/// 3,000 requests with RANGEs (a leaf's first update in such a batch saves its version) and
/// about 1,350 inserts each, more than the pool grown for 100 keys holds, so runs inside RANGE
/// batches find the pool empty too. The driver grows the pool and runs those requests again
/// with the batch's stamp: every outcome equals the CPU twin's, RANGE pages included.
TEST_P(CodsVersionedGpuTwin, PoolGrowsAndEveryRequestAppliesOnce) {
  SKIP_WITHOUT_GPU();
  const Shape s = GetParam();
  const GpuVersionedConfig c = config_of(s, 16);
  std::unique_ptr<GpuVersionedTree> gpu;
  ASSERT_TRUE(make_gpu_versioned_tree(c, &gpu).ok());
  auto cpu = twin_for(c);
  std::mt19937_64 rng(7 + s.k);
  unsigned grew_with_ranges = 0;
  for (int b = 0; b < 12; ++b) {
    Work g = make_batch(rng, b == 0 ? 100 : 3000, 4000, b == 0 ? 0 : 15);
    if (b == 0)
      for (auto& op : g.ops) op = Op::kInsert;
    Work cw = g;
    VersionedBatchResult gr = g.result(), cr = cw.result();
    const std::uint64_t before = gpu->pool_capacity();
    const Status st = gpu->execute(g.batch(), gr);
    ASSERT_TRUE(st.ok()) << "batch " << b << ": " << st.to_string();
    ASSERT_TRUE(cpu->execute(cw.batch(), cr).ok());
    ASSERT_EQ(compare(g, cw, b), 0);
    if (b > 0 && gpu->pool_capacity() > before) ++grew_with_ranges;
  }
  EXPECT_GT(gpu->pool_capacity(), 16u);
  EXPECT_GT(grew_with_ranges, 0u) << "no batch with RANGEs needed the pool to grow";
}

/// A pool grows only as far as its nodes need: a pool of 16 that runs dry in a batch of 3,000
/// inserts grows to no more than four times the nodes the same batch takes from a pool large
/// enough never to grow (doubling gives at most twice; the rest is slack for the splits' order).
/// Caught before the fix: failed allocations advanced the fresh counter past the capacity, so
/// every growth skipped its new nodes and the pool doubled on to 16,384 and beyond.
TEST_P(CodsVersionedGpuTwin, PoolGrowsOnlyAsFarAsItsNodesNeed) {
  SKIP_WITHOUT_GPU();
  const Shape s = GetParam();
  std::mt19937_64 rng(11 + s.k);
  Work w = make_batch(rng, 3000, 1u << 20, 0);
  for (auto& op : w.ops) op = Op::kInsert;
  std::uint64_t used_without_growth = 0, grown = 0;
  for (const std::uint64_t pool : {std::uint64_t(1) << 16, std::uint64_t(16)}) {
    std::unique_ptr<GpuVersionedTree> gpu;
    ASSERT_TRUE(make_gpu_versioned_tree(config_of(s, pool), &gpu).ok());
    Work g = w;
    VersionedBatchResult r = g.result();
    const Status st = gpu->execute(g.batch(), r);
    ASSERT_TRUE(st.ok()) << "pool of " << pool << ": " << st.to_string();
    if (pool == 16) grown = gpu->pool_capacity();
    else used_without_growth = gpu->nodes_used();
  }
  ::testing::Test::RecordProperty("nodes_without_growth", static_cast<int>(used_without_growth));
  ::testing::Test::RecordProperty("grown_capacity", static_cast<int>(grown));
  EXPECT_GT(grown, 16u);
  EXPECT_LE(grown, 4 * used_without_growth) << "the pool grew past its nodes' need";
}

/// Snapshots held across batches: two are held after different batches while mixed batches
/// (with RANGEs at t - 1) run, then batches of RANGEs and updates run at each held snapshot
/// (execute_at), before and after the other is released. Every outcome and page equals the CPU
/// twin's at its own snapshot held at the same point; a released snapshot is refused.
TEST_P(CodsVersionedGpuTwin, SnapshotsHeldAcrossBatches) {
  SKIP_WITHOUT_GPU();
  const Shape s = GetParam();
  const GpuVersionedConfig c = config_of(s, 1 << 10);  // small: holding versions grows it
  std::unique_ptr<GpuVersionedTree> gpu;
  ASSERT_TRUE(make_gpu_versioned_tree(c, &gpu).ok());
  auto cpu = twin_for(c);
  std::mt19937_64 rng(99 + s.k);
  std::uint64_t gsnap[2] = {0, 0};
  std::size_t csnap[2] = {0, 0};
  std::uint64_t pages_at_held = 0;
  for (int b = 0; b < 24; ++b) {
    Work g = make_batch(rng, 1000 + rng() % 1500, 4000, b < 3 ? 0 : 15);
    if (b < 3)
      for (auto& op : g.ops) op = Op::kInsert;
    if (b == 3 || b == 9) {  // hold one after batch 2 and one after batch 8
      const int i = b == 3 ? 0 : 1;
      gsnap[i] = gpu->hold_snapshot();
      csnap[i] = cpu->hold();
    }
    if (b == 18) {
      ASSERT_TRUE(gpu->release_snapshot(gsnap[0]).ok());
      cpu->release(csnap[0]);
    }
    // From batch 12 on, every other batch runs at a held snapshot (the older one until it is
    // released at batch 18).
    const int at = b >= 12 && b % 2 == 0 ? (b < 18 && b % 4 == 0 ? 0 : 1) : -1;
    Work cw = g;
    VersionedBatchResult gr = g.result(), cr = cw.result();
    if (at < 0) {
      ASSERT_TRUE(gpu->execute(g.batch(), gr).ok()) << "batch " << b;
      ASSERT_TRUE(cpu->execute(cw.batch(), cr).ok());
    } else {
      const Status st = gpu->execute_at(gsnap[at], g.batch(), gr);
      ASSERT_TRUE(st.ok()) << "batch " << b << ": " << st.to_string();
      ASSERT_TRUE(cpu->execute_at(csnap[at], cw.batch(), cr).ok());
      for (std::size_t i = 0; i < g.ops.size(); ++i) pages_at_held += g.ops[i] == kOpRange && g.out[i] > 0;
    }
    ASSERT_EQ(compare(g, cw, b), 0);
  }
  EXPECT_GT(pages_at_held, 100u) << "RANGEs at held snapshots should mostly find keys";
  EXPECT_EQ(gpu->held_snapshots(), 1u);
  Work q = make_batch(rng, 10, 4000, 100);
  VersionedBatchResult qr = q.result();
  EXPECT_EQ(gpu->execute_at(gsnap[0], q.batch(), qr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(gpu->release_snapshot(gsnap[0]).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(gpu->release_snapshot(gsnap[1]).ok());
  EXPECT_EQ(gpu->held_snapshots(), 0u);
}

/// A fixed pool (maximum 16), and one that may double once (32): too small for 2,000 inserts
/// either way.
class CodsVersionedGpuPool : public ::testing::TestWithParam<std::uint64_t> {};
INSTANTIATE_TEST_SUITE_P(MaxNodes, CodsVersionedGpuPool, ::testing::Values(16u, 32u));

TEST_P(CodsVersionedGpuPool, ExhaustedPoolLeavesNothingHalfApplied) {
  SKIP_WITHOUT_GPU();
  GpuVersionedConfig c;
  c.pool_nodes = 16;
  c.pool_max_nodes = GetParam();
  std::unique_ptr<GpuVersionedTree> gpu;
  ASSERT_TRUE(make_gpu_versioned_tree(c, &gpu).ok());
  Work w;
  for (std::uint64_t k = 0; k < 2000; ++k) {
    w.ops.push_back(Op::kInsert);
    w.keys.push_back(k);
    w.values.push_back(k + 1);
  }
  VersionedBatchResult r = w.result();
  const Status st = gpu->execute(w.batch(), r);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.to_string();
  EXPECT_EQ(gpu->pool_capacity(), GetParam());
  Work q = w;
  for (auto& op : q.ops) op = Op::kGet;
  VersionedBatchResult qr = q.result();
  ASSERT_TRUE(gpu->execute(q.batch(), qr).ok());
  for (std::size_t i = 0; i < w.ops.size(); ++i) {
    ASSERT_NE(w.status[i], OpStatus::kInvalid);
    EXPECT_EQ(q.status[i], w.status[i] == OpStatus::kRetry ? OpStatus::kNotFound : OpStatus::kFound) << i;
  }
}

TEST(CodsVersionedGpuDriver, BadInput) {
  std::unique_ptr<GpuVersionedTree> gpu;
  GpuVersionedConfig c;
  c.keys_per_node = 6;
  c.group = 8;
  const Status bad = make_gpu_versioned_tree(c, &gpu);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.to_string().find("(14, 16)"), std::string::npos);
  c = GpuVersionedConfig{};
  c.group = 1;
  c.mode = GpuMode::kMixed;  // mixed mode needs a tile for its reads
  const Status lane_mixed = make_gpu_versioned_tree(c, &gpu);
  EXPECT_EQ(lane_mixed.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(lane_mixed.to_string().find("mixed"), std::string::npos) << lane_mixed.to_string();
  c.mode = static_cast<GpuMode>(7);
  EXPECT_EQ(make_gpu_versioned_tree(c, &gpu).code(), StatusCode::kInvalidArgument);
  c = GpuVersionedConfig{};
  c.pool_nodes = 1;
  EXPECT_EQ(make_gpu_versioned_tree(c, &gpu).code(), StatusCode::kInvalidArgument);
  c.pool_nodes = 1024;
  c.pool_max_nodes = 1000;  // a maximum below the first size
  const Status below = make_gpu_versioned_tree(c, &gpu);
  EXPECT_EQ(below.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(below.to_string().find("pool_max_nodes"), std::string::npos) << below.to_string();
  EXPECT_EQ(make_gpu_versioned_tree(GpuVersionedConfig{}, nullptr).code(), StatusCode::kInvalidArgument);
  SKIP_WITHOUT_GPU();
  ASSERT_TRUE(make_gpu_versioned_tree(GpuVersionedConfig{}, &gpu).ok());
  Work w;
  w.ops = {kOpRange, static_cast<Op>(7)};
  w.keys = {50, 1};
  w.values = {10, 0};
  VersionedBatchResult r = w.result();
  const Status range_bad = gpu->execute(w.batch(), r);
  EXPECT_EQ(range_bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(range_bad.to_string().find("50"), std::string::npos);
  w.values = {60, 0};
  r = w.result();
  ASSERT_TRUE(gpu->execute(w.batch(), r).ok());
  EXPECT_EQ(w.status[0], OpStatus::kFound);
  EXPECT_EQ(w.out[0], 0u);
  EXPECT_EQ(w.status[1], OpStatus::kInvalid);
  Batch nul{nullptr, w.keys.data(), w.values.data(), 2};
  EXPECT_EQ(gpu->execute(nul, r).code(), StatusCode::kInvalidArgument);
  w.ops = {Op::kInsert, Op::kGet};
  Batch novals{w.ops.data(), w.keys.data(), nullptr, 2};
  EXPECT_EQ(gpu->execute(novals, r).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace duet::cods::ds
