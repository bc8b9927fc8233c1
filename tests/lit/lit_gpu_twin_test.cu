// The GPU map of the batched LIT against its CPU twin: the same batch sequences on
// make_gpu_batch_map and make_cpu_batch_map, with every outcome compared exactly (each request's
// status and out, each range's status, entries, more flag, resume key, and the snapshot), and
// both against the std::map model of the contract (batch_model.hpp). Batches repeat keys, so
// runs of one bucket span many warps' windows, and hold bad requests, inverted ranges and
// paged ranges. Pool exhaustion is left out (which requests get kRetry depends on timing).
// Skipped, visibly, without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "gpu/device.hpp"
#include "index/lit/batch.hpp"
#include "lit/batch_model.hpp"

namespace duet::lit {
namespace {

using testing::Batch;
using testing::Mix;
using testing::Model;
using testing::Outcome;

#define SKIP_WITHOUT_GPU() \
  if (!duet::gpu::device().present) GTEST_SKIP() << "no GPU: " << duet::gpu::device().reason

/// One sequence of random batches: the key range, the bucket width, the mix and the count.
struct Shape {
  const char* name;
  std::uint64_t keys, width;
  Mix mix;
  int batches;
};

/// Names a shape in gtest's messages.
void PrintTo(const Shape& s, std::ostream* os) { *os << s.name; }

class GpuLitTwin : public ::testing::TestWithParam<Shape> {};

TEST_P(GpuLitTwin, SameOutcomesAsTheCpuTwin) {
  SKIP_WITHOUT_GPU();
  const Shape& sh = GetParam();
  const BatchConfig c = testing::config_for(sh.keys, sh.width, 0, 2);
  std::unique_ptr<BatchMap> gpu, cpu;
  const Status made_gpu = make_gpu_batch_map(c, &gpu);
  ASSERT_TRUE(made_gpu.ok()) << made_gpu.to_string();
  const Status made_cpu = make_cpu_batch_map(c, &cpu);
  ASSERT_TRUE(made_cpu.ok()) << made_cpu.to_string();
  EXPECT_STREQ(gpu->backend(), "gpu");
  EXPECT_STREQ(cpu->backend(), "cpu");
  Model model(c.universe_min, c.universe_max, c.max_range_results);
  std::mt19937_64 rng(std::hash<std::string>()(sh.name));
  for (int i = 0; i < sh.batches; ++i) {
    const std::uint64_t limit = i % 3 == 1 ? 1 + rng() % 40 : 0;
    const Batch b = testing::random_batch(rng, sh.mix, limit);
    const Outcome on_gpu = testing::run(*gpu, b);
    const Outcome on_cpu = testing::run(*cpu, b);
    ASSERT_TRUE(testing::same_outcome(on_gpu, on_cpu, true)) << sh.name << " batch " << i;
    ASSERT_TRUE(testing::same_outcome(on_cpu, model.run(b))) << sh.name << " batch " << i;
  }
  // Each map is dumped once: a dump runs range batches, which count in the epoch compared below.
  const auto on_gpu = testing::dump(*gpu, 0, sh.keys - 1);
  EXPECT_EQ(on_gpu, testing::dump(*cpu, 0, sh.keys - 1));
  EXPECT_EQ(on_gpu, model.range(0, sh.keys - 1));
  EXPECT_EQ(gpu->stats().epoch, cpu->stats().epoch);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GpuLitTwin,
    ::testing::Values(
        // Uniform keys, one node per bucket: the combined 32-update path and packed range walks.
        Shape{"uniform", 200000, 10, testing::mix_for(200000, 20000, 2000, 5, 300), 30},
        // A few wide buckets: nodes split, chains form, updates go through the copy-on-write path.
        Shape{"chained", 10000, 2500, testing::mix_for(10000, 3000, 300, 10, 4000), 25},
        // Sixty-four keys, thousands of requests each: runs of one bucket cross many warps' windows.
        Shape{"hot", 64, 8, testing::mix_for(64, 20000, 200, 60, 64), 20},
        // Large batches over many buckets: every warp of the grid busy, long ranges over chains.
        Shape{"large", 1000000, 40, testing::mix_for(1000000, 1 << 18, 1 << 14, 2, 500), 6}),
    [](const ::testing::TestParamInfo<Shape>& info) { return std::string(info.param.name); });

/// execute_resident on both: device arrays for the GPU map, host arrays for the CPU twin, and the
/// same results (copied back from the GPU map's memory).
TEST(GpuLitTwinResident, SameResultsFromMapMemory) {
  SKIP_WITHOUT_GPU();
  const BatchConfig c = testing::config_for(50000, 10, 0, 2);
  std::unique_ptr<BatchMap> gpu, cpu;
  ASSERT_TRUE(make_gpu_batch_map(c, &gpu).ok());
  ASSERT_TRUE(make_cpu_batch_map(c, &cpu).ok());
  std::mt19937_64 rng(11);
  const Mix m = testing::mix_for(50000, 4000, 400, 10, 500);
  for (int i = 0; i < 10; ++i) {
    const Batch b = testing::random_batch(rng, m);
    const std::size_t n = b.points.size(), nr = b.ranges.size();
    std::vector<BatchOp> ops;
    std::vector<std::uint64_t> keys, values, starts, ends;
    for (const testing::Req& r : b.points) ops.push_back(r.op), keys.push_back(r.key), values.push_back(r.value);
    for (const testing::Span& q : b.ranges) starts.push_back(q.start), ends.push_back(q.end);
    // CPU twin: host arrays.
    std::vector<BatchStatus> cst(n);
    std::vector<std::uint64_t> cout(n);
    RangeBatch crb{starts.data(), ends.data(), nr, 0};
    RangeResidentResults crr;
    ASSERT_TRUE(cpu->execute_resident({ops.data(), keys.data(), values.data(), n}, {cst.data(), cout.data()}, &crb,
                                      &crr).ok());
    // GPU map: device arrays.
    BatchOp* d_ops;
    std::uint64_t *d_keys, *d_values, *d_out, *d_starts, *d_ends;
    BatchStatus* d_status;
    ASSERT_EQ(cudaMalloc(&d_ops, n), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_keys, n * 8), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_values, n * 8), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_out, n * 8), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_status, n), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_starts, nr * 8), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_ends, nr * 8), cudaSuccess);
    cudaMemcpy(d_ops, ops.data(), n, cudaMemcpyHostToDevice);
    cudaMemcpy(d_keys, keys.data(), n * 8, cudaMemcpyHostToDevice);
    cudaMemcpy(d_values, values.data(), n * 8, cudaMemcpyHostToDevice);
    cudaMemcpy(d_starts, starts.data(), nr * 8, cudaMemcpyHostToDevice);
    cudaMemcpy(d_ends, ends.data(), nr * 8, cudaMemcpyHostToDevice);
    RangeBatch grb{d_starts, d_ends, nr, 0};
    RangeResidentResults grr;
    ASSERT_TRUE(gpu->execute_resident({d_ops, d_keys, d_values, n}, {d_status, d_out}, &grb, &grr).ok());
    std::vector<BatchStatus> gst(n);
    std::vector<std::uint64_t> gout(n), goff(nr + 1), gkeys(grr.total), gvals(grr.total), gres(nr);
    std::vector<std::uint8_t> gmore(nr);
    std::vector<BatchStatus> grst(nr);
    cudaMemcpy(gst.data(), d_status, n, cudaMemcpyDeviceToHost);
    cudaMemcpy(gout.data(), d_out, n * 8, cudaMemcpyDeviceToHost);
    cudaMemcpy(goff.data(), grr.offsets, (nr + 1) * 8, cudaMemcpyDeviceToHost);
    cudaMemcpy(grst.data(), grr.status, nr, cudaMemcpyDeviceToHost);
    cudaMemcpy(gmore.data(), grr.more, nr, cudaMemcpyDeviceToHost);
    cudaMemcpy(gres.data(), grr.resume, nr * 8, cudaMemcpyDeviceToHost);
    if (grr.total) {
      cudaMemcpy(gkeys.data(), grr.keys, grr.total * 8, cudaMemcpyDeviceToHost);
      cudaMemcpy(gvals.data(), grr.values, grr.total * 8, cudaMemcpyDeviceToHost);
    }
    cudaFree(d_ops), cudaFree(d_keys), cudaFree(d_values), cudaFree(d_out), cudaFree(d_status);
    cudaFree(d_starts), cudaFree(d_ends);
    EXPECT_EQ(gst, cst) << "batch " << i;
    EXPECT_EQ(gout, cout) << "batch " << i;
    ASSERT_EQ(grr.total, crr.total) << "batch " << i;
    EXPECT_EQ(grr.snapshot, crr.snapshot);
    EXPECT_EQ(goff, std::vector<std::uint64_t>(crr.offsets, crr.offsets + nr + 1));
    EXPECT_EQ(grst, std::vector<BatchStatus>(crr.status, crr.status + nr));
    EXPECT_EQ(gmore, std::vector<std::uint8_t>(crr.more, crr.more + nr));
    EXPECT_EQ(gres, std::vector<std::uint64_t>(crr.resume, crr.resume + nr));
    EXPECT_EQ(gkeys, std::vector<std::uint64_t>(crr.keys, crr.keys + crr.total));
    EXPECT_EQ(gvals, std::vector<std::uint64_t>(crr.values, crr.values + crr.total));
  }
}

}  // namespace
}  // namespace duet::lit
