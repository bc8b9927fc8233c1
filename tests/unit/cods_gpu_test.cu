// CODS on the GPU: the same cases as cods_cpu_test.cpp, run by tiles of 8, 16 and 32 lanes.
// Skipped, visibly, when no GPU is present.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "gpu/device.hpp"
#include "unit/cods_cases.hpp"

using namespace duet::cods;

namespace {

#define SKIP_WITHOUT_GPU() \
  if (!duet::gpu::device().present) GTEST_SKIP() << "no GPU: " << duet::gpu::device().reason

template <unsigned N>
__global__ void fragment_kernel(CObject<32>* objs, CObject<8>* atom, int* bad) {
  auto g = GpuTile<N>::of_this_block();
  const unsigned tile = (blockIdx.x * blockDim.x + threadIdx.x) / N;
  int b = cases::fragment_ops_case(g, objs[tile], tile);
  b += cases::element_atomics_case(g, atom[tile]);
  if (g.is_leader()) atomicAdd(bad, b);
}

template <unsigned N>
__global__ void atomic_kernel(AtomicCObject<32>* obj, int iters, int* torn) {
  auto g = GpuTile<N>::of_this_block();
  const unsigned tile = (blockIdx.x * blockDim.x + threadIdx.x) / N;
  const int t = cases::fully_atomic_case(g, *obj, tile % 2 == 0, tile, iters);
  if (g.is_leader()) atomicAdd(torn, t);
}

template <unsigned N>
void run_fragment_case() {
  constexpr unsigned kTiles = 64;
  CObject<32> host[kTiles];
  for (unsigned t = 0; t < kTiles; ++t)
    for (unsigned i = 0; i < 32; ++i) host[t].elem[i] = 3 * i + 1 + t;
  CObject<32>* d_objs;
  CObject<8>* d_atom;
  int* d_bad;
  ASSERT_EQ(cudaMalloc(&d_objs, sizeof(host)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_atom, sizeof(CObject<8>) * kTiles), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_bad, sizeof(int)), cudaSuccess);
  cudaMemcpy(d_objs, host, sizeof(host), cudaMemcpyHostToDevice);
  cudaMemset(d_atom, 0, sizeof(CObject<8>) * kTiles);
  cudaMemset(d_bad, 0, sizeof(int));
  fragment_kernel<N><<<kTiles * N / 64, 64>>>(d_objs, d_atom, d_bad);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  int bad = -1;
  cudaMemcpy(&bad, d_bad, sizeof(int), cudaMemcpyDeviceToHost);
  EXPECT_EQ(bad, 0) << "tile of " << N;
  cudaFree(d_objs);
  cudaFree(d_atom);
  cudaFree(d_bad);
}

template <unsigned N>
void run_atomic_case() {
  AtomicCObject<32>* d_obj;
  int* d_torn;
  ASSERT_EQ(cudaMalloc(&d_obj, sizeof(AtomicCObject<32>)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_torn, sizeof(int)), cudaSuccess);
  cudaMemset(d_obj, 0, sizeof(AtomicCObject<32>));
  cudaMemset(d_torn, 0, sizeof(int));
  constexpr int kIters = 200;
  const unsigned blocks = 64, threads = 128;
  atomic_kernel<N><<<blocks, threads>>>(d_obj, kIters, d_torn);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  int torn = -1;
  AtomicCObject<32> h;
  cudaMemcpy(&torn, d_torn, sizeof(int), cudaMemcpyDeviceToHost);
  cudaMemcpy(&h, d_obj, sizeof(h), cudaMemcpyDeviceToHost);
  EXPECT_EQ(torn, 0) << "tile of " << N;
  const unsigned writers = blocks * threads / N / 2;
  EXPECT_EQ(h.version, 2ull * writers * kIters) << "every set completes exactly once";
  cudaFree(d_obj);
  cudaFree(d_torn);
}

}  // namespace

TEST(CodsGpu, FragmentOperationsTile8) { SKIP_WITHOUT_GPU(); run_fragment_case<8>(); }
TEST(CodsGpu, FragmentOperationsTile16) { SKIP_WITHOUT_GPU(); run_fragment_case<16>(); }
TEST(CodsGpu, FragmentOperationsTile32) { SKIP_WITHOUT_GPU(); run_fragment_case<32>(); }
TEST(CodsGpu, FullyAtomicTile8) { SKIP_WITHOUT_GPU(); run_atomic_case<8>(); }
TEST(CodsGpu, FullyAtomicTile16) { SKIP_WITHOUT_GPU(); run_atomic_case<16>(); }
TEST(CodsGpu, FullyAtomicTile32) { SKIP_WITHOUT_GPU(); run_atomic_case<32>(); }
