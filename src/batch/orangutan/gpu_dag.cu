// The GPU conflict DAG (gpu_dag.hpp): kernels 1 and 2 of Alg. 15 and their host driver.
#include <cuda_runtime.h>

#include <cstring>
#include <vector>

#include "batch/orangutan/gpu_dag.hpp"
#include "batch/orangutan/union_find.hpp"
#include "gpu/cuda_try.hpp"
#include "gpu/device.hpp"

namespace duet::batch::orangutan {

namespace {

constexpr unsigned kThreads = kDagTile;  // threads per block = columns per tile

/// parent[i] = i.
__global__ void init_kernel(std::uint32_t* parent, std::uint32_t n) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) parent[i] = i;
}

/// Kernel 1's work on one tile pair: thread t holds row `row0 + t`'s access set in registers;
/// the column tile's access sets are loaded into shared memory (the seed's line 8, fixed:
/// shared[threadIdx] = txs[start + threadIdx]); the row is unioned with the first later
/// transaction of the tile that touches its sender and the first that touches its receiver.
/// (Unioning each transaction with the next one on each of its accounts connects every
/// conflicting pair transitively, so the clusters equal those of unioning every pair, with at
/// most two unions per row and tile instead of one per conflicting pair.)
__device__ __forceinline__ void check_tile(const uint2* sets, std::uint32_t n, std::uint32_t row0, std::uint32_t col0,
                                           std::uint32_t* parent, uint2* tile, DagFaults f) {
  const std::uint32_t row = row0 + threadIdx.x;
  const std::uint32_t c = col0 + threadIdx.x;
  if (c < n) tile[threadIdx.x] = sets[c];
  __syncthreads();
  if (row < n) {
    const uint2 mine = sets[row];
    const std::uint32_t width = min(blockDim.x, n - col0);
    bool need_s = true, need_r = !f.ignore_receiver;
    const std::uint32_t k0 = col0 > row ? 0 : row - col0 + 1;  // only columns after the row
    for (std::uint32_t k = k0; k < width && (need_s || need_r); ++k) {
      const uint2 o = tile[k];
      const bool hit_s = f.ignore_receiver ? o.x == mine.x : (o.x == mine.x || o.y == mine.x);
      const bool hit_r = o.x == mine.y || o.y == mine.y;
      if ((need_s && hit_s) || (need_r && hit_r)) {
        uf_union(parent, row, col0 + k, f.larger_root);
        if (hit_s) need_s = false;
        if (hit_r) need_r = false;
      }
    }
  }
  __syncthreads();
}

/// Kernel 1: one block per tile pair (row tile <= column tile) of the upper triangle, so every
/// block does the same work; blockIdx.x enumerates the pairs row by row.
__global__ void conflict_kernel(const uint2* sets, std::uint32_t n, std::uint32_t tiles, std::uint32_t* parent,
                                DagFaults f) {
  __shared__ uint2 tile[kThreads];
  // Pair p -> (rt, ct): rows of the triangle hold tiles, tiles-1, ... pairs.
  std::uint32_t p = blockIdx.x, rt = 0, len = tiles;
  while (p >= len) {
    p -= len;
    ++rt;
    --len;
  }
  check_tile(sets, n, rt * blockDim.x, (rt + p) * blockDim.x, parent, tile, f);
}

/// Kernel 2, roots form: root[i] = find(i).
__global__ void roots_kernel(std::uint32_t* parent, std::uint32_t n, std::uint32_t* root) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) root[i] = uf_find(parent, i);
}

/// Kernel 2, matrix form: bit j of row find(j) of the upper-triangular D (rows of `words`
/// 32-bit words, zeroed beforehand).
__global__ void matrix_kernel(std::uint32_t* parent, std::uint32_t n, std::uint32_t* d, std::uint32_t words) {
  const std::uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n) return;
  const std::uint32_t r = uf_find(parent, j);
  if (r > j) return;  // below the diagonal: D has no such entry
  atomicOr(d + std::size_t(r) * words + j / 32, 1u << (j % 32));
}

/// Blocks of one tile: everything in one block (one launch).
__global__ void fused_kernel(const uint2* sets, std::uint32_t n, std::uint32_t* parent, std::uint32_t* root,
                             DagFaults f) {
  __shared__ uint2 tile[kThreads];
  for (std::uint32_t i = threadIdx.x; i < n; i += blockDim.x) parent[i] = i;
  __syncthreads();
  check_tile(sets, n, 0, 0, parent, tile, f);
  for (std::uint32_t i = threadIdx.x; i < n; i += blockDim.x) root[i] = uf_find(parent, i);
}

class GpuDagImpl final : public GpuDag {
 public:
  ~GpuDagImpl() override {
    if (stream_) {
      cudaStreamSynchronize(stream_);
      cudaStreamDestroy(stream_);
    }
    if (done_) cudaEventDestroy(done_);
    cudaFree(d_sets_);
    cudaFree(d_parent_);
    cudaFree(d_root_);
    cudaFree(d_matrix_);
    cudaFreeHost(h_sets_);
    cudaFreeHost(h_root_);
    cudaFreeHost(h_matrix_);
  }

  Status init(std::size_t cap) {
    cap_ = cap;
    DUET_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    DUET_CUDA_TRY(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
    DUET_CUDA_TRY(cudaMalloc(&d_sets_, cap * sizeof(uint2)));
    DUET_CUDA_TRY(cudaMalloc(&d_parent_, cap * sizeof(std::uint32_t)));
    DUET_CUDA_TRY(cudaMalloc(&d_root_, cap * sizeof(std::uint32_t)));
    DUET_CUDA_TRY(cudaMallocHost(&h_sets_, cap * sizeof(uint2)));
    DUET_CUDA_TRY(cudaMallocHost(&h_root_, cap * sizeof(std::uint32_t)));
    {
      const std::size_t m = std::min(cap, kMaxMatrixTxs), words = (m + 31) / 32;
      DUET_CUDA_TRY(cudaMalloc(&d_matrix_, m * words * 4));
      DUET_CUDA_TRY(cudaMallocHost(&h_matrix_, m * words * 4));
    }
    return Status::Ok();
  }

  Status launch(const Tx* txs, std::size_t n, DagForm form, DagFaults faults) override {
    if (n > cap_) return Status::InvalidArgument("block of " + std::to_string(n) + " transactions exceeds the GPU DAG slot's " + std::to_string(cap_));
    if (form == DagForm::kMatrix && n > kMaxMatrixTxs) return Status::InvalidArgument("the matrix form needs blocks of at most " + std::to_string(kMaxMatrixTxs));
    if (launched_) DUET_CUDA_TRY(cudaEventSynchronize(done_));  // the staging buffer is free again
    n_ = n;
    form_ = form;
    auto* sets = static_cast<uint2*>(h_sets_);
    for (std::size_t i = 0; i < n; ++i) sets[i] = make_uint2(txs[i].sender, txs[i].receiver);
    if (n == 0) return Status::Ok();
    const auto un = static_cast<std::uint32_t>(n);
    DUET_CUDA_TRY(cudaMemcpyAsync(d_sets_, h_sets_, n * sizeof(uint2), cudaMemcpyHostToDevice, stream_));
    const unsigned blocks = (un + kThreads - 1) / kThreads;
    if (form == DagForm::kRoots && n <= kFusedMaxTxs) {
      fused_kernel<<<1, kThreads, 0, stream_>>>(static_cast<const uint2*>(d_sets_), un, d_parent_, d_root_, faults);
    } else {
      init_kernel<<<blocks, kThreads, 0, stream_>>>(d_parent_, un);
      const std::uint32_t tiles = blocks;
      const std::uint32_t pairs = tiles * (tiles + 1) / 2;
      conflict_kernel<<<pairs, kThreads, 0, stream_>>>(static_cast<const uint2*>(d_sets_), un, tiles, d_parent_, faults);
      if (form == DagForm::kRoots) {
        roots_kernel<<<blocks, kThreads, 0, stream_>>>(d_parent_, un, d_root_);
      } else {
        const std::uint32_t words = (un + 31) / 32;
        DUET_CUDA_TRY(cudaMemsetAsync(d_matrix_, 0, std::size_t(un) * words * 4, stream_));
        matrix_kernel<<<blocks, kThreads, 0, stream_>>>(d_parent_, un, d_matrix_, words);
      }
    }
    DUET_CUDA_TRY(cudaGetLastError());
    if (form == DagForm::kRoots) {
      DUET_CUDA_TRY(cudaMemcpyAsync(h_root_, d_root_, n * 4, cudaMemcpyDeviceToHost, stream_));
    } else {
      const std::size_t words = (n + 31) / 32;
      DUET_CUDA_TRY(cudaMemcpyAsync(h_matrix_, d_matrix_, n * words * 4, cudaMemcpyDeviceToHost, stream_));
    }
    DUET_CUDA_TRY(cudaEventRecord(done_, stream_));
    launched_ = true;
    return Status::Ok();
  }

  Status wait(const std::uint32_t** root) override {
    if (launched_) DUET_CUDA_TRY(cudaEventSynchronize(done_));
    if (form_ == DagForm::kMatrix) {
      // Each row r with bit r set is a root; its set bits are its members.
      const std::size_t words = (n_ + 31) / 32;
      const auto* d = static_cast<const std::uint32_t*>(h_matrix_);
      auto* out = static_cast<std::uint32_t*>(h_root_);
      for (std::size_t i = 0; i < n_; ++i) out[i] = UINT32_MAX;
      for (std::size_t r = 0; r < n_; ++r) {
        const std::uint32_t* row = d + r * words;
        if (!(row[r / 32] >> (r % 32) & 1u)) continue;
        for (std::size_t w = r / 32; w < words; ++w)
          for (std::uint32_t bits = row[w]; bits; bits &= bits - 1) out[w * 32 + __builtin_ctz(bits)] = static_cast<std::uint32_t>(r);
      }
      for (std::size_t i = 0; i < n_; ++i)
        if (out[i] == UINT32_MAX) out[i] = static_cast<std::uint32_t>(n_);  // no row holds it (a planted bug)
    }
    *root = static_cast<const std::uint32_t*>(h_root_);
    return Status::Ok();
  }

  std::size_t capacity() const override { return cap_; }
  bool idle() override { return !launched_ || cudaEventQuery(done_) != cudaErrorNotReady; }

 private:
  std::size_t cap_ = 0, n_ = 0;
  DagForm form_ = DagForm::kRoots;
  bool launched_ = false;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t done_ = nullptr;
  void* d_sets_ = nullptr;
  std::uint32_t* d_parent_ = nullptr;
  std::uint32_t* d_root_ = nullptr;
  std::uint32_t* d_matrix_ = nullptr;
  void* h_sets_ = nullptr;
  void* h_root_ = nullptr;
  void* h_matrix_ = nullptr;
};

}  // namespace

Status make_gpu_dag(std::size_t max_txs, std::unique_ptr<GpuDag>* out) {
  if (!gpu::device().present) return Status::Unavailable("no GPU for the conflict DAG: " + gpu::device().reason);
  if (max_txs == 0) max_txs = 1;
  auto d = std::make_unique<GpuDagImpl>();
  Status s = d->init(max_txs);
  if (!s.ok()) return s;
  *out = std::move(d);
  return Status::Ok();
}

}  // namespace duet::batch::orangutan
