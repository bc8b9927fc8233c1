// The batched LIT's warp code path, the one the GPU map compiles for cods::GpuTile<32>, run on
// emulated warps (sim_warp.hpp) over host memory: each pass of a batch is run by a few warps in
// the GPU map's grid-stride order, through the same core functions as gpu_lit.cu's kernels. So
// the lane-indexed logic (windows of 32 sorted updates, runs that cross windows and warps,
// combined runs and their retries, packed range rounds, ranks across lanes) is checked against
// the CPU twin and the model on any machine. Warps run one after another, which is one of the
// schedules a GPU may choose. Skipped under AddressSanitizer, which does not follow fibers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "index/lit/batch.hpp"
#include "index/lit/batch_core.hpp"
#include "lit/batch_model.hpp"
#include "lit/sim_warp.hpp"
#include "mem/host_memory.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define DUET_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DUET_TEST_ASAN 1
#endif
#endif

namespace duet::lit {
namespace {

using testing::Batch;
using testing::Mix;
using testing::Model;
using testing::Outcome;
using testing::SimTile;
using testing::SimWarp;

/// The GPU map's passes (gpu_lit.cu's run_locked) with `warps` emulated warps per pass.
class WarpSimMap {
 public:
  WarpSimMap(const BatchConfig& c, unsigned warps) : config_(c), warps_(warps) {
    const RootLayout l = root_layout(c);
    v_.nbuckets = l.buckets;
    v_.capacity = l.node_capacity;
    v_.buckets = static_cast<std::uint64_t*>(mem::map_zeroed(l.buckets * 8));
    v_.nodes = static_cast<core::Node*>(mem::map_zeroed(l.node_capacity * sizeof(core::Node)));
    v_.free_list = static_cast<std::uint32_t*>(mem::map_zeroed(l.node_capacity * 4));
    v_.retired = static_cast<std::uint32_t*>(mem::map_zeroed(l.node_capacity * 4));
    v_.pool = &pool_;
    v_.pmin = c.predicted_min;
    v_.width = c.bucket_width;
    v_.umin = c.universe_min;
    v_.umax = c.universe_max;
    for (std::uint64_t b = 0; b < l.buckets; ++b) v_.buckets[b] = core::empty_word();
  }
  ~WarpSimMap() {
    mem::unmap(v_.buckets, v_.nbuckets * 8);
    mem::unmap(v_.nodes, v_.capacity * sizeof(core::Node));
    mem::unmap(v_.free_list, v_.capacity * 4);
    mem::unmap(v_.retired, v_.capacity * 4);
  }

  /// Warp instructions of collectives run so far (a measure of the work emulated).
  std::uint64_t collectives() const { return collectives_; }

  Outcome run(const Batch& b) {
    std::vector<BatchOp> ops;
    std::vector<std::uint64_t> keys, values, starts, ends;
    for (const testing::Req& r : b.points) ops.push_back(r.op), keys.push_back(r.key), values.push_back(r.value);
    for (const testing::Span& q : b.ranges) starts.push_back(q.start), ends.push_back(q.end);
    const std::uint64_t* vals = b.with_values ? values.data() : nullptr;
    const std::uint64_t np = ops.size(), nr = starts.size();
    Outcome o;
    o.status.assign(np, BatchStatus::kRetry);
    o.out.assign(np, ~std::uint64_t{0});
    std::uint64_t limit = b.limit == 0 || b.limit > config_.max_range_results ? config_.max_range_results : b.limit;
    const std::uint64_t epoch = ++epoch_;
    const core::View v = v_;
    const std::uint64_t stride = std::uint64_t(warps_) * 32;
    if (np) {  // pass 1
      std::vector<std::uint32_t> key(np), sb(np), si(np);
      for (std::uint64_t i = 0; i < np; ++i) key[i] = core::update_sort_key(v, ops.data(), keys.data(), vals != nullptr, i);
      std::iota(si.begin(), si.end(), 0u);
      std::stable_sort(si.begin(), si.end(), [&](std::uint32_t x, std::uint32_t y) { return key[x] < key[y]; });
      for (std::uint64_t i = 0; i < np; ++i) sb[i] = key[si[i]];
      const std::uint64_t fc = pool_.free_count;
      each_warp([&](const SimTile& g, unsigned w) {
        for (std::uint64_t base = w * 32; base < np; base += stride)
          if (!core::update_window(g, v, epoch, fc, ops.data(), keys.data(), vals, sb.data(), si.data(), np, base,
                                   o.status.data(), o.out.data()))
            return;
      });
    }
    std::vector<std::uint64_t> counts(nr + 1, 0), offsets(nr + 1), resume(nr);
    std::vector<BatchStatus> rstatus(nr);
    std::vector<std::uint8_t> more(nr);
    each_warp([&](const SimTile& g, unsigned w) {  // pass 2
      for (std::uint64_t base = w * 32; base < np + nr; base += stride)
        core::batch_window(g, v, epoch, ops.data(), keys.data(), vals, o.status.data(), o.out.data(), np, starts.data(),
                           ends.data(), nr, limit, counts.data(), rstatus.data(), more.data(), resume.data(), base);
    });
    std::exclusive_scan(counts.begin(), counts.end(), offsets.begin(), std::uint64_t{0});
    const std::uint64_t total = offsets[nr];
    std::vector<std::uint64_t> okeys(total), ovals(total);
    if (total)
      each_warp([&](const SimTile& g, unsigned w) {  // pass 3
        for (std::uint64_t base = w * 32; base < nr; base += stride)
          core::fill_window(g, v, epoch, starts.data(), ends.data(), nr, limit, rstatus.data(), offsets.data(),
                            okeys.data(), ovals.data(), base);
      });
    o.ranges.offsets = offsets;
    o.ranges.keys = okeys;
    o.ranges.values = ovals;
    o.ranges.status = rstatus;
    o.ranges.more = more;
    o.ranges.resume = resume;
    o.ranges.snapshot = epoch - 1;
    const std::uint64_t retries = pool_.retries;  // pass 4
    const std::uint64_t base = core::recycle_base(pool_);
    for (std::uint64_t i = 0; i < pool_.retired; ++i) core::recycle_one(v, base, i);
    core::recycle_finish(&pool_);
    o.s = retries ? Status::ResourceExhausted("kRetry") : Status::Ok();
    return o;
  }

 private:
  template <class Body>
  void each_warp(Body body) {
    for (unsigned w = 0; w < warps_; ++w) {
      sim_.run([&](const SimTile& g) { body(g, w); });
      collectives_ += sim_.collectives();
    }
  }

  BatchConfig config_;
  unsigned warps_;
  core::Pool pool_{};
  core::View v_{};
  std::uint64_t epoch_ = 0, collectives_ = 0;
  SimWarp sim_;
};

struct Shape {
  const char* name;
  std::uint64_t keys, width, capacity;
  unsigned warps;
  Mix mix;
  int batches;
};

/// Names a shape in gtest's messages.
void PrintTo(const Shape& s, std::ostream* os) { *os << s.name; }

class LitBatchWarp : public ::testing::TestWithParam<Shape> {};

TEST_P(LitBatchWarp, SameOutcomesAsTheCpuTwin) {
#ifdef DUET_TEST_ASAN
  GTEST_SKIP() << "fibers are not followed by AddressSanitizer";
#endif
  const Shape& sh = GetParam();
  const BatchConfig c = testing::config_for(sh.keys, sh.width, sh.capacity, 1);
  WarpSimMap warp(c, sh.warps);
  std::unique_ptr<BatchMap> cpu;
  ASSERT_TRUE(make_cpu_batch_map(c, &cpu).ok());
  Model model(c.universe_min, c.universe_max, c.max_range_results);
  std::mt19937_64 rng(std::hash<std::string>()(sh.name));
  for (int i = 0; i < sh.batches; ++i) {
    const Batch b = testing::random_batch(rng, sh.mix, i % 2 ? 1 + rng() % 20 : 0);
    const Outcome on_warps = warp.run(b);
    ASSERT_TRUE(testing::same_outcome(on_warps, testing::run(*cpu, b), true)) << sh.name << " batch " << i;
    ASSERT_TRUE(testing::same_outcome(on_warps, model.run(b))) << sh.name << " batch " << i;
  }
  EXPECT_GT(warp.collectives(), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, LitBatchWarp,
    ::testing::Values(
        // One node per bucket: combined runs, packed range rounds over many buckets.
        Shape{"uniform", 4000, 10, 0, 2, testing::mix_for(4000, 300, 30, 5, 200, 3), 6},
        // Wide buckets: splits of full nodes, chains, the one-by-one path after a combined run.
        Shape{"chained", 2000, 1000, 0, 3, testing::mix_for(2000, 300, 20, 10, 1500, 3), 6},
        // Few keys, many requests each: runs longer than a window, owned across warps.
        Shape{"hot", 48, 8, 0, 2, testing::mix_for(48, 400, 10, 60, 48, 3), 5}),
    [](const ::testing::TestParamInfo<Shape>& info) { return std::string(info.param.name); });

// A pool too small for a batch: requests that find it exhausted (one by one, or a whole
// combined run) report kRetry and change nothing; the rest are applied as the model says.
TEST(LitBatchWarpPool, ExhaustionRetriesChangeNothing) {
#ifdef DUET_TEST_ASAN
  GTEST_SKIP() << "fibers are not followed by AddressSanitizer";
#endif
  const BatchConfig c = testing::config_for(20000, 10, 40, 1);
  WarpSimMap warp(c, 2);
  Batch b;
  for (std::uint64_t k = 0; k < 200; ++k) b.points.push_back({BatchOp::kInsert, k * 40 + (k % 3), k});
  for (std::uint64_t k = 0; k < 64; ++k) b.points.push_back({BatchOp::kUpsert, 5 + (k % 4), 1000 + k});  // one bucket
  const Outcome o = warp.run(b);
  EXPECT_EQ(o.s.code(), StatusCode::kResourceExhausted);
  Model model(c.universe_min, c.universe_max, c.max_range_results);
  std::size_t retried = 0;
  for (std::size_t i = 0; i < b.points.size(); ++i) {
    ASSERT_TRUE(o.status[i] != BatchStatus::kInvalid) << i;
    if (o.status[i] == BatchStatus::kRetry) {
      ++retried;
      EXPECT_EQ(o.out[i], 0u);
    } else {
      model.apply_one(b.points[i]);
    }
  }
  EXPECT_GT(retried, 0u);
  Batch all;
  all.ranges = {{0, 19999}};
  const Outcome d = warp.run(all);
  EXPECT_EQ(testing::entries(d.ranges, 0), model.range(0, 19999));
}

}  // namespace
}  // namespace duet::lit
