// The GPU map of the batched LIT: the algorithm of batch_core.hpp run by warps (one
// cods::GpuTile<32> per request window), with the passes of a batch as kernels on the map's
// stream. See batch.hpp for the contract and batch_core.hpp for the algorithm, its layout and
// its proof sketch; this file holds the kernels and the host side (memory, staging, the sort
// and scan by CUB, and recycling between batches).
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>

#include "cods/group.hpp"
#include "gpu/cuda_try.hpp"
#include "gpu/device.hpp"
#include "gpu/device_buffer.hpp"
#include "index/lit/batch_core.hpp"
#include "index/lit/common.hpp"
#include "index/lit/gpu_lit.hpp"

namespace duet::lit {

namespace {

using core::Node;
using core::Pool;
using core::View;
using Warp = cods::GpuTile<32>;

constexpr unsigned kBlock = 256;

/// Pass 1: sort keys for update_kernel, the bucket of each valid update and nbuckets for
/// anything else, with each request's index.
__global__ void update_keys_kernel(View v, const BatchOp* __restrict__ ops, const std::uint64_t* __restrict__ keys,
                                   const std::uint64_t* __restrict__ values, std::uint64_t np,
                                   std::uint32_t* __restrict__ bucket, std::uint32_t* __restrict__ index) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < np;
       i += std::uint64_t(gridDim.x) * blockDim.x) {
    bucket[i] = core::update_sort_key(v, ops, keys, values != nullptr, i);
    index[i] = std::uint32_t(i);
  }
}

/// Pass 1: each warp takes windows of 32 sorted updates (core::update_window), grid-stride,
/// and stops at the first window without updates (sorted: none follow).
__global__ void __launch_bounds__(kBlock, 4) update_kernel(View v, std::uint64_t epoch, const BatchOp* __restrict__ ops,
                                                        const std::uint64_t* __restrict__ keys,
                                                        const std::uint64_t* __restrict__ values,
                                                        const std::uint32_t* __restrict__ sorted_bucket,
                                                        const std::uint32_t* __restrict__ sorted_index, std::uint64_t np,
                                                        BatchStatus* __restrict__ status, std::uint64_t* __restrict__ out) {
  const Warp g = Warp::of_this_block();
  const std::uint64_t warps = std::uint64_t(gridDim.x) * blockDim.x / 32;
  const std::uint64_t warp = (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const std::uint64_t fc = v.pool->free_count;
  for (std::uint64_t base = warp * 32; base < np; base += warps * 32)
    if (!core::update_window(g, v, epoch, fc, ops, keys, values, sorted_bucket, sorted_index, np, base, status, out))
      return;
}

/// Pass 2: point requests [0, np) and range counts [np, np + nr), 32 items per warp window
/// (core::batch_window), grid-stride.
__global__ void __launch_bounds__(kBlock, 4) batch_kernel(View v, std::uint64_t epoch, const BatchOp* __restrict__ ops,
                                                       const std::uint64_t* __restrict__ keys,
                                                       const std::uint64_t* __restrict__ values,
                                                       BatchStatus* __restrict__ status, std::uint64_t* __restrict__ out,
                                                       std::uint64_t np, const std::uint64_t* __restrict__ starts,
                                                       const std::uint64_t* __restrict__ ends, std::uint64_t nr,
                                                       std::uint64_t limit, std::uint64_t* __restrict__ counts,
                                                       BatchStatus* __restrict__ rstatus, std::uint8_t* __restrict__ more,
                                                       std::uint64_t* __restrict__ resume) {
  const Warp g = Warp::of_this_block();
  const std::uint64_t warps = std::uint64_t(gridDim.x) * blockDim.x / 32;
  const std::uint64_t warp = (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const std::uint64_t total = np + nr;
  for (std::uint64_t base = warp * 32; base < total; base += warps * 32)
    core::batch_window(g, v, epoch, ops, keys, values, status, out, np, starts, ends, nr, limit, counts, rstatus, more,
                       resume, base);
}

/// Pass 3: range fills, 32 queries per warp window (core::fill_window), grid-stride.
__global__ void __launch_bounds__(kBlock) fill_kernel(View v, std::uint64_t epoch, const std::uint64_t* __restrict__ starts,
                                                      const std::uint64_t* __restrict__ ends, std::uint64_t nr,
                                                      std::uint64_t limit, const BatchStatus* __restrict__ rstatus,
                                                      const std::uint64_t* __restrict__ offsets,
                                                      std::uint64_t* __restrict__ okeys, std::uint64_t* __restrict__ ovals) {
  const Warp g = Warp::of_this_block();
  const std::uint64_t warps = std::uint64_t(gridDim.x) * blockDim.x / 32;
  const std::uint64_t warp = (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  for (std::uint64_t base = warp * 32; base < nr; base += warps * 32)
    core::fill_window(g, v, epoch, starts, ends, nr, limit, rstatus, offsets, okeys, ovals, base);
}

/// Pass 4, step 1: append the retired list to the free list's untaken part.
__global__ void recycle_copy_kernel(View v) {
  const std::uint64_t base = core::recycle_base(*v.pool), nret = v.pool->retired;
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < nret;
       i += std::uint64_t(gridDim.x) * blockDim.x)
    core::recycle_one(v, base, i);
}

/// Pass 4, step 2: the counters.
__global__ void recycle_count_kernel(Pool* p) { core::recycle_finish(p); }

__global__ void init_buckets_kernel(std::uint64_t* b, std::uint64_t n) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::uint64_t(gridDim.x) * blockDim.x)
    b[i] = core::empty_word();
}

class GpuMapImpl final : public GpuMap {
 public:
  explicit GpuMapImpl(const GpuConfig& c) : config_(c) {}
  ~GpuMapImpl() override {
    if (stream_) cudaStreamSynchronize(stream_);
    cudaFree(view_.buckets);
    cudaFree(view_.nodes);
    cudaFree(view_.free_list);
    cudaFree(view_.retired);
    cudaFree(view_.pool);
    if (h_pool_) cudaFreeHost(h_pool_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  /// Allocates the root and the pool for a checked configuration. Unavailable without a GPU.
  Status init() {
    const gpu::DeviceInfo& dev = gpu::device();
    if (!dev.present) return Status::Unavailable("no GPU: " + dev.reason);
    sms_ = dev.sm_count > 0 ? dev.sm_count : 1;
    const RootLayout layout = root_layout(config_);
    nbuckets_ = layout.buckets;
    capacity_ = layout.node_capacity;
    DUET_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    core::set_shape(view_, config_, nbuckets_, capacity_);
    DUET_CUDA_TRY(cudaMalloc(&view_.buckets, nbuckets_ * 8));
    DUET_CUDA_TRY(cudaMalloc(&view_.nodes, capacity_ * sizeof(Node)));
    DUET_CUDA_TRY(cudaMalloc(&view_.free_list, capacity_ * 4));
    DUET_CUDA_TRY(cudaMalloc(&view_.retired, capacity_ * 4));
    DUET_CUDA_TRY(cudaMalloc(&view_.pool, sizeof(Pool)));
    DUET_CUDA_TRY(cudaMallocHost(&h_pool_, sizeof(Pool) + 8));
    DUET_CUDA_TRY(cudaMemsetAsync(view_.pool, 0, sizeof(Pool), stream_));
    init_buckets_kernel<<<sms_ * 8, kBlock, 0, stream_>>>(view_.buckets, nbuckets_);
    DUET_CUDA_TRY(cudaGetLastError());
    DUET_CUDA_TRY(cudaStreamSynchronize(stream_));
    return Status::Ok();
  }

  const GpuConfig& config() const override { return config_; }
  std::uint64_t bucket_of(std::uint64_t key) const override {
    return root_bucket(config_.predicted_min, config_.bucket_width, nbuckets_, key);
  }

  GpuStats stats() override {
    std::lock_guard<std::mutex> lock(m_);
    GpuStats s;
    s.epoch = epoch_;
    s.buckets = nbuckets_;
    s.node_capacity = capacity_;
    if (cudaMemcpyAsync(h_pool_, view_.pool, sizeof(Pool), cudaMemcpyDeviceToHost, stream_) == cudaSuccess &&
        cudaStreamSynchronize(stream_) == cudaSuccess) {
      s.nodes_touched = std::min<std::uint64_t>(h_pool_->bump, capacity_);
      s.nodes_free = h_pool_->free_count;
      s.nodes_recycled = h_pool_->recycled;
    }
    return s;
  }

  Status execute_resident(const GpuPointBatch& points, GpuPointResults results, const GpuRangeBatch* ranges,
                          GpuRangeDeviceResults* rr) override {
    Status s = detail::check_batch_args(points, results, ranges, rr != nullptr);
    if (!s.ok()) return s;
    std::lock_guard<std::mutex> lock(m_);
    return run_locked(points, results, ranges, rr);
  }

  Status execute(const GpuPointBatch& points, GpuPointResults results, const GpuRangeBatch* ranges,
                 GpuRangeResults* rr) override {
    Status s = detail::check_batch_args(points, results, ranges, rr != nullptr);
    if (!s.ok()) return s;
    std::lock_guard<std::mutex> lock(m_);
    const std::size_t np = points.n, nr = ranges ? ranges->n : 0;
    GpuPointBatch dp{nullptr, nullptr, nullptr, np};
    GpuPointResults dres{};
    if (np) {
      if (!(s = in_ops_.reserve(np)).ok() || !(s = in_keys_.reserve(np)).ok() || !(s = in_out_.reserve(np)).ok() ||
          !(s = in_status_.reserve(np)).ok())
        return s;
      DUET_CUDA_TRY(cudaMemcpyAsync(in_ops_.data(), points.ops, np, cudaMemcpyHostToDevice, stream_));
      DUET_CUDA_TRY(cudaMemcpyAsync(in_keys_.data(), points.keys, np * 8, cudaMemcpyHostToDevice, stream_));
      dp.ops = in_ops_.data();
      dp.keys = in_keys_.data();
      if (points.values) {
        if (!(s = in_values_.reserve(np)).ok()) return s;
        DUET_CUDA_TRY(cudaMemcpyAsync(in_values_.data(), points.values, np * 8, cudaMemcpyHostToDevice, stream_));
        dp.values = in_values_.data();
      }
      dres = {in_status_.data(), in_out_.data()};
    }
    GpuRangeBatch drb{};
    if (nr) {
      if (!(s = in_starts_.reserve(nr)).ok() || !(s = in_ends_.reserve(nr)).ok()) return s;
      DUET_CUDA_TRY(cudaMemcpyAsync(in_starts_.data(), ranges->starts, nr * 8, cudaMemcpyHostToDevice, stream_));
      DUET_CUDA_TRY(cudaMemcpyAsync(in_ends_.data(), ranges->ends, nr * 8, cudaMemcpyHostToDevice, stream_));
      drb = {in_starts_.data(), in_ends_.data(), nr, ranges->limit};
    }
    GpuRangeDeviceResults dr{};
    const Status run = run_locked(dp, dres, nr || ranges ? &drb : nullptr, &dr);
    if (!run.ok() && run.code() != StatusCode::kResourceExhausted) return run;
    if (np) {
      DUET_CUDA_TRY(cudaMemcpyAsync(results.status, dres.status, np, cudaMemcpyDeviceToHost, stream_));
      DUET_CUDA_TRY(cudaMemcpyAsync(results.out, dres.out, np * 8, cudaMemcpyDeviceToHost, stream_));
    }
    if (rr) {
      detail::size_range_results(rr, nr, dr.total, dr.snapshot);
      if (nr && dr.offsets) {
        DUET_CUDA_TRY(cudaMemcpyAsync(rr->offsets.data(), dr.offsets, (nr + 1) * 8, cudaMemcpyDeviceToHost, stream_));
        DUET_CUDA_TRY(cudaMemcpyAsync(rr->status.data(), dr.status, nr, cudaMemcpyDeviceToHost, stream_));
        DUET_CUDA_TRY(cudaMemcpyAsync(rr->more.data(), dr.more, nr, cudaMemcpyDeviceToHost, stream_));
        DUET_CUDA_TRY(cudaMemcpyAsync(rr->resume.data(), dr.resume, nr * 8, cudaMemcpyDeviceToHost, stream_));
      }
      if (dr.total && dr.keys) {
        DUET_CUDA_TRY(cudaMemcpyAsync(rr->keys.data(), dr.keys, dr.total * 8, cudaMemcpyDeviceToHost, stream_));
        DUET_CUDA_TRY(cudaMemcpyAsync(rr->values.data(), dr.values, dr.total * 8, cudaMemcpyDeviceToHost, stream_));
      }
    }
    DUET_CUDA_TRY(cudaStreamSynchronize(stream_));
    return run;
  }

 private:
  unsigned grid_for(std::uint64_t items) const {
    const std::uint64_t warps_needed = (items + 31) / 32;
    const std::uint64_t blocks = (warps_needed + kBlock / 32 - 1) / (kBlock / 32);
    const std::uint64_t max_blocks = std::uint64_t(sms_) * (2048 / kBlock) * 4;
    return unsigned(std::max<std::uint64_t>(1, std::min(blocks, max_blocks)));
  }

  Status run_locked(const GpuPointBatch& p, GpuPointResults r, const GpuRangeBatch* ranges,
                    GpuRangeDeviceResults* rr) {
    const std::uint64_t np = p.n, nr = ranges ? ranges->n : 0;
    if (np == 0 && nr == 0) {
      if (rr) {
        *rr = {};
        rr->snapshot = epoch_;
        if (ranges) {
          Status s = counts_.reserve(1);
          if (!s.ok()) return s;
          DUET_CUDA_TRY(cudaMemsetAsync(counts_.data(), 0, 8, stream_));
          rr->offsets = counts_.data();
        }
      }
      return Status::Ok();
    }
    std::uint64_t limit = ranges ? ranges->limit : 0;
    if (limit == 0 || limit > config_.max_range_results) limit = config_.max_range_results;
    Status s;
    if (nr) {
      if (!(s = counts_.reserve(nr + 1)).ok() || !(s = offsets_.reserve(nr + 1)).ok() ||
          !(s = rstatus_.reserve(nr)).ok() || !(s = more_.reserve(nr)).ok() || !(s = resume_.reserve(nr)).ok())
        return s;
      DUET_CUDA_TRY(cudaMemsetAsync(counts_.data() + nr, 0, 8, stream_));
    }
    const std::uint64_t epoch = ++epoch_;
    if (np) {  // updates first, grouped by bucket (see core::update_window)
      if (!(s = sort_bucket_.reserve(2 * np)).ok() || !(s = sort_index_.reserve(2 * np)).ok()) return s;
      std::uint32_t *kin = sort_bucket_.data(), *kout = sort_bucket_.data() + np, *iin = sort_index_.data(),
                    *iout = sort_index_.data() + np;
      update_keys_kernel<<<grid_for(np), kBlock, 0, stream_>>>(view_, p.ops, p.keys, p.values, np, kin, iin);
      DUET_CUDA_TRY(cudaGetLastError());
      const int end_bit = 64 - __builtin_clzll(nbuckets_);  // the sentinel nbuckets fits
      std::size_t tmp = 0;
      DUET_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, tmp, kin, kout, iin, iout, np, 0, end_bit, stream_));
      if (!(s = sort_tmp_.reserve(tmp)).ok()) return s;
      DUET_CUDA_TRY(cub::DeviceRadixSort::SortPairs(sort_tmp_.data(), tmp, kin, kout, iin, iout, np, 0, end_bit, stream_));
      update_kernel<<<grid_for(np), kBlock, 0, stream_>>>(view_, epoch, p.ops, p.keys, p.values, kout, iout, np,
                                                          r.status, r.out);
      DUET_CUDA_TRY(cudaGetLastError());
    }
    batch_kernel<<<grid_for(np + nr), kBlock, 0, stream_>>>(view_, epoch, p.ops, p.keys, p.values, r.status, r.out, np,
                                                            nr ? ranges->starts : nullptr, nr ? ranges->ends : nullptr,
                                                            nr, limit, counts_.data(), rstatus_.data(), more_.data(),
                                                            resume_.data());
    DUET_CUDA_TRY(cudaGetLastError());
    std::uint64_t total = 0;
    if (nr) {
      std::size_t tmp = 0;
      DUET_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, tmp, counts_.data(), offsets_.data(), nr + 1, stream_));
      if (!(s = scan_tmp_.reserve(tmp)).ok()) return s;
      DUET_CUDA_TRY(cub::DeviceScan::ExclusiveSum(scan_tmp_.data(), tmp, counts_.data(), offsets_.data(), nr + 1, stream_));
      std::uint64_t* h_total = reinterpret_cast<std::uint64_t*>(h_pool_ + 1);
      DUET_CUDA_TRY(cudaMemcpyAsync(h_total, offsets_.data() + nr, 8, cudaMemcpyDeviceToHost, stream_));
      DUET_CUDA_TRY(cudaStreamSynchronize(stream_));
      total = *h_total;
      if (Status grow = okeys_.reserve(total); !grow.ok() || !(grow = ovals_.reserve(total)).ok()) {
        // The point requests ran; the ranges report no entries.
        const Status recycled = recycle();
        return recycled.ok() ? grow : recycled;
      }
      if (total)
        fill_kernel<<<grid_for(nr), kBlock, 0, stream_>>>(view_, epoch, ranges->starts, ranges->ends, nr, limit,
                                                          rstatus_.data(), offsets_.data(), okeys_.data(), ovals_.data());
      DUET_CUDA_TRY(cudaGetLastError());
    }
    if (rr) {
      rr->offsets = nr ? offsets_.data() : nullptr;
      rr->keys = okeys_.data();
      rr->values = ovals_.data();
      rr->status = rstatus_.data();
      rr->more = more_.data();
      rr->resume = resume_.data();
      rr->total = total;
      rr->snapshot = epoch - 1;
    }
    // Read the retry counter before the recycle step clears it.
    DUET_CUDA_TRY(cudaMemcpyAsync(h_pool_, view_.pool, sizeof(Pool), cudaMemcpyDeviceToHost, stream_));
    if (Status recycled = recycle(); !recycled.ok()) return recycled;
    DUET_CUDA_TRY(cudaStreamSynchronize(stream_));
    if (h_pool_->retries) return Status::ResourceExhausted(std::to_string(h_pool_->retries) +
                                                           " requests found the node pool exhausted (kRetry)");
    return Status::Ok();
  }

  Status recycle() {
    recycle_copy_kernel<<<sms_ * 4, kBlock, 0, stream_>>>(view_);
    recycle_count_kernel<<<1, 1, 0, stream_>>>(view_.pool);
    DUET_CUDA_TRY(cudaGetLastError());
    return Status::Ok();
  }

  GpuConfig config_;
  std::mutex m_;
  cudaStream_t stream_ = nullptr;
  int sms_ = 1;
  std::uint64_t nbuckets_ = 0, capacity_ = 0, epoch_ = 0;
  View view_{};
  Pool* h_pool_ = nullptr;  // pinned; followed by one word for the range total
  gpu::DeviceBuffer<unsigned char> scan_tmp_, sort_tmp_;        // CUB's temporary storage
  gpu::DeviceBuffer<std::uint32_t> sort_bucket_, sort_index_;  // update_kernel's sort: keys in | out, indexes in | out
  gpu::DeviceBuffer<std::uint64_t> counts_, offsets_, resume_, okeys_, ovals_;
  gpu::DeviceBuffer<BatchStatus> rstatus_;
  gpu::DeviceBuffer<std::uint8_t> more_;
  // Device copies of execute()'s host arrays.
  gpu::DeviceBuffer<BatchOp> in_ops_;
  gpu::DeviceBuffer<BatchStatus> in_status_;
  gpu::DeviceBuffer<std::uint64_t> in_keys_, in_values_, in_out_, in_starts_, in_ends_;
};

}  // namespace

Status GpuMap::create(const GpuConfig& c, std::unique_ptr<GpuMap>* out) {
  if (!out) return Status::InvalidArgument("out is null");
  if (Status s = check_config(c); !s.ok()) return s;
  auto m = std::make_unique<GpuMapImpl>(c);
  Status s = m->init();
  if (!s.ok()) return s;
  *out = std::move(m);
  return Status::Ok();
}

Status make_gpu_batch_map(const BatchConfig& c, std::unique_ptr<BatchMap>* out) {
  if (!out) return Status::InvalidArgument("out is null");
  std::unique_ptr<GpuMap> m;
  Status s = GpuMap::create(c, &m);
  if (s.ok()) *out = std::move(m);
  return s;
}

}  // namespace duet::lit
