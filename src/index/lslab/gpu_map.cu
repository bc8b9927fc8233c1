// The GPU L-Slab map: the algorithm of core.hpp run by tiles of W lanes, one request at a time
// per tile with the request's owner lane as the source of the broadcast (dissertation 2.5.1).
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "gpu/cuda_try.hpp"
#include "gpu/host_copy.hpp"
#include "gpu/device.hpp"
#include "gpu/device_buffer.hpp"
#include "index/lslab/core.hpp"
#include "index/lslab/factory.hpp"
#include "index/lslab/map.hpp"

namespace duet::lslab {
namespace {

constexpr unsigned kBlockThreads = 256;

template <unsigned W>
__global__ void init_heads_kernel(Slab<W>* heads, std::uint64_t buckets) {
  for (std::uint64_t b = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; b < buckets;
       b += std::uint64_t(gridDim.x) * blockDim.x)
    init_head_slab(heads[b]);
}

/// Asks for the value line of a head slab to be brought into L2 (the key line, which holds the
/// lock word, is read by every request anyway).
template <unsigned W>
__device__ __forceinline__ void prefetch_values(const Slab<W>* s) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(&s->values));
}

/// Each tile takes `per_tile` (1 to W) consecutive requests, one per lane, and runs them with
/// lslab_execute_group. Small batches use fewer lanes per tile so more tiles work at once.
/// retry_only: run only requests whose status is kRetry.
/// kMinBlocks: blocks of kBlockThreads that must fit on one SM, which caps registers (8: 32
/// registers and full occupancy, with some spilling; 1: no cap).
template <unsigned W, unsigned kMinBlocks>
__global__ void __launch_bounds__(kBlockThreads, kMinBlocks)
    batch_kernel(MapView<W> m, const Op* __restrict__ ops, const std::uint64_t* __restrict__ keys,
                 const std::uint64_t* __restrict__ values, OpStatus* __restrict__ status,
                 std::uint64_t* __restrict__ out, std::uint64_t n, unsigned per_tile, bool retry_only,
                 unsigned prefetch) {
  const auto g = cods::GpuTile<W>::of_this_block();
  const std::uint64_t tiles = std::uint64_t(gridDim.x) * blockDim.x / W;
  const std::uint64_t tile = (blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x) / W;
  for (std::uint64_t base = tile * per_tile; base < n; base += tiles * per_tile) {
    const std::uint64_t i = base + g.lane();
    bool mine = g.lane() < per_tile && i < n;
    if (mine && retry_only) mine = status[i] == OpStatus::kRetry;
    Op op = Op::kGet;
    std::uint64_t key = 0, value = 0;
    OpStatus invalid = OpStatus::kNotFound;
    if (mine) {
      op = ops[i];
      key = keys[i];
      if (op == Op::kPut) {
        if (values) value = values[i];
        else invalid = OpStatus::kInvalid;
      }
      // Writes wait on their value line under the lock, so prefetching it pays; a GET reads
      // one 32-byte sector of it, and prefetching the whole line costs more than it saves
      // (measured: docs/lslab.md). prefetch: 0 never, 1 writes only, 2 every request.
      if (prefetch > (op == Op::kGet ? 1u : 0u) && key != kReservedKey) prefetch_values(m.head_of(key));
    }
    const bool run = mine && invalid != OpStatus::kInvalid;
    const OpResult r = lslab_execute_group(g, m, run, op, key, value);
    if (mine) {
      status[i] = run ? r.status : OpStatus::kInvalid;
      out[i] = run ? r.value : 0;
    }
  }
}

/// A batch's arrays twice over, pinned host staging and device memory, grown on demand: one
/// per submission path (the map's execute(), each lane). Not thread-safe. Pinned staging makes
/// the copies asynchronous DMA at full bus speed.
struct StagedBatch {
  ~StagedBatch() { release_host(); }
  /// Room for n requests; ResourceExhausted (left empty) when memory is short.
  Status reserve(std::size_t n) {
    if (n <= capacity) return Status::Ok();
    release_host();
    h_ops = static_cast<Op*>(gpu::alloc_host(n));
    h_status = static_cast<OpStatus*>(gpu::alloc_host(n));
    h_keys = static_cast<std::uint64_t*>(gpu::alloc_host(n * 8));
    h_values = static_cast<std::uint64_t*>(gpu::alloc_host(n * 8));
    h_out = static_cast<std::uint64_t*>(gpu::alloc_host(n * 8));
    const bool device_ok = d_ops.reserve(n).ok() && d_status.reserve(n).ok() && d_keys.reserve(n).ok() &&
                           d_values.reserve(n).ok() && d_out.reserve(n).ok();
    if (!device_ok || !h_ops || !h_status || !h_keys || !h_values || !h_out) {
      release_host();
      return Status::ResourceExhausted("cannot allocate staging for " + std::to_string(n) + " requests");
    }
    capacity = n;
    return Status::Ok();
  }
  /// Queues the copy of the first n staged requests to the device (values when with_values).
  Status copy_in(std::size_t n, bool with_values, cudaStream_t st) {
    DUET_CUDA_TRY(cudaMemcpyAsync(d_ops.data(), h_ops, n * sizeof(Op), cudaMemcpyHostToDevice, st));
    DUET_CUDA_TRY(cudaMemcpyAsync(d_keys.data(), h_keys, n * 8, cudaMemcpyHostToDevice, st));
    if (with_values) DUET_CUDA_TRY(cudaMemcpyAsync(d_values.data(), h_values, n * 8, cudaMemcpyHostToDevice, st));
    return Status::Ok();
  }
  /// Copies the first n outcomes back to the host staging and waits for the stream.
  Status copy_out(std::size_t n, cudaStream_t st) {
    DUET_CUDA_TRY(cudaMemcpyAsync(h_status, d_status.data(), n * sizeof(OpStatus), cudaMemcpyDeviceToHost, st));
    DUET_CUDA_TRY(cudaMemcpyAsync(h_out, d_out.data(), n * 8, cudaMemcpyDeviceToHost, st));
    DUET_CUDA_TRY(cudaStreamSynchronize(st));
    return Status::Ok();
  }
  Batch device_batch(std::size_t n, bool with_values) const {
    return {d_ops.data(), d_keys.data(), with_values ? d_values.data() : nullptr, n};
  }
  BatchResult device_result() const { return {d_status.data(), d_out.data()}; }
  /// Frees the host staging and marks the batch empty (the device arrays are kept for reuse).
  void release_host() {
    for (void* p : {static_cast<void*>(h_ops), static_cast<void*>(h_status), static_cast<void*>(h_keys),
                    static_cast<void*>(h_values), static_cast<void*>(h_out)})
      gpu::free_host(p);
    h_ops = nullptr, h_status = nullptr, h_keys = h_values = h_out = nullptr;
    capacity = 0;
  }

  std::size_t capacity = 0;
  Op* h_ops = nullptr;
  OpStatus* h_status = nullptr;
  std::uint64_t *h_keys = nullptr, *h_values = nullptr, *h_out = nullptr;
  gpu::DeviceBuffer<Op> d_ops;
  gpu::DeviceBuffer<OpStatus> d_status;
  gpu::DeviceBuffer<std::uint64_t> d_keys, d_values, d_out;
};

template <unsigned W>
class GpuLane;

template <unsigned W>
class GpuMap final : public Map {
 public:
  explicit GpuMap(const Config& c) : config_(c) {}

  ~GpuMap() override {
    for (Slab<W>* p : h_chunks_) cudaFree(p);
    cudaFree(view_.heads);
    cudaFree(d_chunks_);
    cudaFree(d_counters_);
    gpu::free_host(h_counters_);
  }

  Status init() {
    const gpu::DeviceInfo& dev = gpu::device();
    if (!dev.present) return Status::Unavailable("no GPU: " + dev.reason);
    if (config_.placement == Placement::kManaged && !dev.managed_memory)
      return Status::Unavailable("the GPU does not support managed memory");
    Status s = stream_.create();
    if (!s.ok()) return s;
    stream_handle_ = static_cast<cudaStream_t>(stream_.handle());
    buckets_ = bucket_count(config_, W);
    chunk_shift_ = detail::chunk_shift_for(buckets_);
    Slab<W>* heads = nullptr;
    DUET_CUDA_TRY(alloc(reinterpret_cast<void**>(&heads), sizeof(Slab<W>) * buckets_));
    view_.heads = heads;
    view_.buckets = buckets_;
    DUET_CUDA_TRY(cudaMalloc(&d_chunks_, sizeof(Slab<W>*) * kMaxChunks));
    DUET_CUDA_TRY(cudaMemset(d_chunks_, 0, sizeof(Slab<W>*) * kMaxChunks));
    DUET_CUDA_TRY(cudaMalloc(&d_counters_, sizeof(PoolCounters)));
    h_counters_ = static_cast<PoolCounters*>(gpu::alloc_host(sizeof(PoolCounters)));
    if (!h_counters_) return Status::ResourceExhausted("cannot allocate pinned host memory");
    std::memset(h_counters_, 0, sizeof(PoolCounters));
    h_counters_->clear_free_lists();
    DUET_CUDA_TRY(cudaMemcpy(d_counters_, h_counters_, sizeof(PoolCounters), cudaMemcpyHostToDevice));
    view_.chunks = d_chunks_;
    view_.chunk_shift = chunk_shift_;
    view_.pool = d_counters_;
    view_.read_policy = config_.read_policy;
    init_heads_kernel<W><<<dev.sm_count * 8, kBlockThreads, 0, stream_handle_>>>(heads, buckets_);
    DUET_CUDA_TRY(cudaGetLastError());
    // Register budget of the batch kernel: blocks of 256 threads resident per SM (8 = full
    // occupancy at 32 registers). DUET_LSLAB_OCCUPANCY=free|6|full picks; measured in docs/lslab.md.
    const char* occ = std::getenv("DUET_LSLAB_OCCUPANCY");
    const std::string occupancy = occ ? occ : "6";
    kernel_ = occupancy == "full" ? batch_kernel<W, 8> : occupancy == "free" ? batch_kernel<W, 1> : batch_kernel<W, 6>;
    if (const char* pf = std::getenv("DUET_LSLAB_PREFETCH")) prefetch_ = static_cast<unsigned>(std::atoi(pf));
    int per_sm = 0;
    DUET_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel_, kBlockThreads, 0));
    grid_ = std::max(1, per_sm) * dev.sm_count;
    s = grow(detail::initial_pool_slabs(config_, Slab<W>::kKeySlots));
    if (!s.ok()) return s;
    grows_ = 0;
    return stream_.synchronize();
  }

  Status execute(const Batch& batch, BatchResult& result) override {
    return guarded(batch, result, [&] { return execute_locked(batch, result); });
  }

  Status execute_resident(const Batch& batch, BatchResult& result) override {
    return guarded(batch, result, [&] { return run_locked(batch, result); });
  }

 private:
  /// Checks the arguments, then runs `run` under mutex_, draining the stream if it failed.
  template <class Run>
  Status guarded(const Batch& batch, const BatchResult& result, Run run) {
    Status s = detail::check_batch(batch, result);
    if (!s.ok() || batch.n == 0) return s;
    std::unique_lock<std::shared_mutex> lk(mutex_);
    return drained_on_error(run());
  }

  /// After a failed CUDA call, waits for work already queued so the next call starts on an
  /// idle stream (staging buffers and pool growth need one). Returns s.
  Status drained_on_error(Status s) {
    if (!s.ok() && s.code() != StatusCode::kResourceExhausted) {
      cudaStreamSynchronize(stream_handle_);
      cudaGetLastError();
    }
    return s;
  }

  /// execute() with mutex_ held: stage, run, copy back.
  Status execute_locked(const Batch& batch, BatchResult& result) {
    Status s = staging_.reserve(batch.n);
    if (!s.ok()) return s;
    const std::size_t n = batch.n;
    const bool with_values = batch.values != nullptr;
    std::memcpy(staging_.h_ops, batch.ops, n * sizeof(Op));
    std::memcpy(staging_.h_keys, batch.keys, n * 8);
    if (with_values) std::memcpy(staging_.h_values, batch.values, n * 8);
    s = staging_.copy_in(n, with_values, stream_handle_);
    if (!s.ok()) return s;
    Batch db = staging_.device_batch(n, with_values);
    BatchResult dr = staging_.device_result();
    s = run_locked(db, dr);
    if (!s.ok() && s.code() != StatusCode::kResourceExhausted) return s;
    Status copied = staging_.copy_out(n, stream_handle_);
    if (!copied.ok()) return copied;
    std::memcpy(result.status, staging_.h_status, n * sizeof(OpStatus));
    std::memcpy(result.values, staging_.h_out, n * 8);
    return s;
  }


 public:
  PoolStats stats() const override {
    std::unique_lock<std::shared_mutex> lk(mutex_);
    PoolStats s;
    s.buckets = buckets_;
    s.pool_capacity = h_counters_->capacity;
    s.pool_handed_out = h_counters_->handed_out();
    s.pool_free = h_counters_->free_slabs();
    s.pool_grows = grows_;
    s.slab_bytes = sizeof(Slab<W>);
    return s;
  }
  const char* backend() const override { return "gpu"; }
  unsigned slab_width() const override { return W; }
  Status open_lane(std::unique_ptr<Lane>* out) override;

  Status export_entries(std::vector<std::uint64_t>* keys, std::vector<std::uint64_t>* values) override {
    std::unique_lock<std::shared_mutex> lk(mutex_);
    DUET_CUDA_TRY(cudaMemcpyAsync(h_counters_, d_counters_, sizeof(PoolCounters), cudaMemcpyDeviceToHost,
                                  stream_handle_));
    DUET_CUDA_TRY(cudaStreamSynchronize(stream_handle_));
    constexpr std::uint64_t kPiece = 1u << 15;
    std::vector<Slab<W>> buf(kPiece);
    auto scan = [&](const Slab<W>* d, std::uint64_t n) -> Status {
      for (std::uint64_t at = 0; at < n; at += kPiece) {
        const std::uint64_t m = std::min(kPiece, n - at);
        DUET_CUDA_TRY(cudaMemcpy(buf.data(), d + at, m * sizeof(Slab<W>), cudaMemcpyDeviceToHost));
        for (std::uint64_t i = 0; i < m; ++i) export_slab(buf[i], keys, values);
      }
      return Status::Ok();
    };
    Status s = scan(view_.heads, buckets_);
    const std::uint64_t used = h_counters_->handed_out();
    const std::uint64_t per_chunk = std::uint64_t(1) << chunk_shift_;
    for (std::size_t c = 0; s.ok() && c < h_chunks_.size() && c * per_chunk < used; ++c)
      s = scan(h_chunks_[c], std::min(per_chunk, used - c * per_chunk));
    return s;
  }

  Status export_range(std::uint64_t from, std::uint64_t max_slabs, std::vector<std::uint64_t>* keys,
                      std::vector<std::uint64_t>* values, std::uint64_t* next) override {
    std::shared_lock<std::shared_mutex> lk(mutex_);  // lanes keep running; growth waits
    PoolCounters counters;
    DUET_CUDA_TRY(cudaMemcpy(&counters, d_counters_, sizeof(PoolCounters), cudaMemcpyDeviceToHost));
    const std::uint64_t total = buckets_ + counters.handed_out();
    const std::uint64_t end = from < total ? from + std::min(max_slabs, total - from) : from;
    const std::uint64_t per_chunk = std::uint64_t(1) << chunk_shift_;
    std::vector<Slab<W>> buf;
    std::uint64_t at = from;
    while (at < end) {
      // One contiguous device piece: within the heads, or within one pool chunk.
      const Slab<W>* src;
      std::uint64_t n;
      if (at < buckets_) {
        src = view_.heads + at;
        n = std::min(end, buckets_) - at;
      } else {
        const std::uint64_t idx = at - buckets_, c = idx >> chunk_shift_;
        if (c >= h_chunks_.size()) break;
        src = h_chunks_[c] + (idx & (per_chunk - 1));
        n = std::min(end - at, per_chunk - (idx & (per_chunk - 1)));
      }
      buf.resize(n);
      DUET_CUDA_TRY(cudaMemcpy(buf.data(), src, n * sizeof(Slab<W>), cudaMemcpyDeviceToHost));
      for (std::uint64_t i = 0; i < n; ++i) export_slab(buf[i], keys, values);
      at += n;
    }
    *next = at >= total ? 0 : at;
    return Status::Ok();
  }

  /// Lane support: takes `need` slabs from the lane budget, refilling it (growing the pool,
  /// with every lane idle) when short. Caller holds no lock.
  Status take_lane_budget(std::int64_t need) {
    for (;;) {
      if (lane_budget_.fetch_sub(need, std::memory_order_relaxed) >= need) return Status::Ok();
      lane_budget_.fetch_add(need, std::memory_order_relaxed);
      std::unique_lock<std::shared_mutex> lk(mutex_);
      if (lane_budget_.load(std::memory_order_relaxed) >= need) continue;  // refilled meanwhile
      DUET_CUDA_TRY(cudaMemcpyAsync(h_counters_, d_counters_, sizeof(PoolCounters), cudaMemcpyDeviceToHost,
                                    stream_handle_));
      DUET_CUDA_TRY(cudaStreamSynchronize(stream_handle_));
      std::uint64_t avail = h_counters_->capacity - h_counters_->handed_out() + h_counters_->free_slabs();
      const std::uint64_t want = std::max<std::uint64_t>(std::uint64_t(need) * 8, 1u << 14);
      if (avail < want) {
        Status s = grow(h_counters_->capacity + (want - avail));
        if (!s.ok() && s.code() != StatusCode::kResourceExhausted) return s;
        avail = h_counters_->capacity - h_counters_->handed_out() + h_counters_->free_slabs();
      }
      // Keep a margin: other lanes' kernels may have consumed slabs the copy did not see.
      lane_budget_.store(static_cast<std::int64_t>(avail) / 2, std::memory_order_relaxed);
      if (static_cast<std::int64_t>(avail) / 2 < need) return Status::Ok();  // let the kernel mark retries
    }
  }

  /// Lane support: re-runs the requests a lane's kernel marked kRetry, growing the pool with
  /// every lane idle. d/h are the lane's arrays; h_status holds the outcomes copied back.
  Status rerun_retries(const Batch& d, BatchResult& dr, OpStatus* h_status, std::uint64_t* h_out, cudaStream_t st,
                       std::size_t retries) {
    std::unique_lock<std::shared_mutex> lk(mutex_);
    while (retries > 0) {
      DUET_CUDA_TRY(cudaMemcpyAsync(h_counters_, d_counters_, sizeof(PoolCounters), cudaMemcpyDeviceToHost,
                                    stream_handle_));
      DUET_CUDA_TRY(cudaStreamSynchronize(stream_handle_));
      Status s = grow(h_counters_->capacity + std::max<std::uint64_t>(retries, 1024));
      if (!s.ok())
        return Status::ResourceExhausted("slab pool cannot grow (" + s.message() + "); " + std::to_string(retries) +
                                         " requests marked retry were not applied");
      launch(d, dr, st, true);
      DUET_CUDA_TRY(cudaGetLastError());
      DUET_CUDA_TRY(cudaMemcpyAsync(h_status, dr.status, d.n * sizeof(OpStatus), cudaMemcpyDeviceToHost, st));
      DUET_CUDA_TRY(cudaMemcpyAsync(h_out, dr.values, d.n * 8, cudaMemcpyDeviceToHost, st));
      DUET_CUDA_TRY(cudaStreamSynchronize(st));
      retries = std::count(h_status, h_status + d.n, OpStatus::kRetry);
    }
    return Status::Ok();
  }

  /// Lane support: launches the batch kernel on stream st under the shared lock.
  Status launch_shared(const Batch& d, BatchResult& dr, cudaStream_t st) {
    launch(d, dr, st, false);
    return cudaGetLastError() == cudaSuccess ? Status::Ok() : Status::Internal("lane kernel launch failed");
  }

  /// Launches the batch kernel over d on stream st: each tile takes up to W requests, fewer
  /// when the batch is small, so that more tiles work at once. retry_only: see batch_kernel.
  void launch(const Batch& d, BatchResult& dr, cudaStream_t st, bool retry_only) {
    const std::uint64_t tiles = std::uint64_t(grid_) * kBlockThreads / W;
    const unsigned per_tile = static_cast<unsigned>(std::clamp<std::uint64_t>((d.n + tiles - 1) / tiles, 1, W));
    kernel_<<<grid_, kBlockThreads, 0, st>>>(view_, d.ops, d.keys, d.values, dr.status, dr.values, d.n, per_tile,
                                             retry_only, prefetch_);
  }

 private:
  cudaError_t alloc(void** p, std::size_t bytes) {
    return config_.placement == Placement::kManaged ? cudaMallocManaged(p, bytes) : cudaMalloc(p, bytes);
  }

  std::uint64_t max_slabs() const { return detail::pool_slab_limit(config_, chunk_shift_); }

  /// Launches the batch (already on the device), then grows the pool and re-runs the requests
  /// that found it empty until none remain. Leaves h_counters_ current. Caller holds mutex_.
  Status run_locked(const Batch& b, BatchResult& r) {
    // Keep headroom for this batch's new slabs so re-runs stay rare.
    const std::uint64_t avail = h_counters_->capacity - h_counters_->handed_out() + h_counters_->free_slabs();
    const std::uint64_t headroom = b.n / Slab<W>::kKeySlots + 1024;
    if (avail < headroom) {
      Status s = grow(h_counters_->capacity + (headroom - avail));
      if (!s.ok() && s.code() != StatusCode::kResourceExhausted) return s;
    }
    bool retry_only = false;
    for (;;) {
      DUET_CUDA_TRY(cudaMemsetAsync(&d_counters_->retries, 0, 8, stream_handle_));
      launch(b, r, stream_handle_, retry_only);
      DUET_CUDA_TRY(cudaGetLastError());
      DUET_CUDA_TRY(cudaMemcpyAsync(h_counters_, d_counters_, sizeof(PoolCounters), cudaMemcpyDeviceToHost,
                                    stream_handle_));
      DUET_CUDA_TRY(cudaStreamSynchronize(stream_handle_));
      if (h_counters_->retries == 0) return Status::Ok();
      Status s = grow(h_counters_->capacity + std::max<std::uint64_t>(h_counters_->retries, 1024));
      if (!s.ok()) {
        return Status::ResourceExhausted("slab pool cannot grow (" + s.message() + "); " +
                                         std::to_string(h_counters_->retries) +
                                         " requests marked retry were not applied");
      }
      retry_only = true;
    }
  }

  /// Commits device chunks until the pool holds at least `want` slabs. Caller holds mutex_
  /// (or is init); no kernel of this map is running.
  Status grow(std::uint64_t want) {
    const std::uint64_t cap = h_counters_->capacity;
    if (cap >= want) return Status::Ok();
    const std::uint64_t chunk = std::uint64_t(1) << chunk_shift_;
    const std::uint64_t target = detail::pool_growth_target(cap, want, chunk_shift_, max_slabs());
    if (target < want) return Status::ResourceExhausted("slab pool limit of " + std::to_string(max_slabs()) + " reached");
    std::uint64_t committed = cap;
    Status failure;
    while (committed < target) {
      void* p = nullptr;
      cudaError_t e = alloc(&p, sizeof(Slab<W>) * chunk);
      if (e != cudaSuccess) {
        cudaGetLastError();
        failure = Status::ResourceExhausted(std::string("device memory exhausted growing slab pool: ") +
                                            cudaGetErrorString(e));
        break;
      }
      const unsigned k = static_cast<unsigned>(committed >> chunk_shift_);
      h_chunks_.push_back(static_cast<Slab<W>*>(p));
      DUET_CUDA_TRY(::duet::gpu::copy_to_device(d_chunks_ + k, &h_chunks_.back(), sizeof(Slab<W>*)));
      committed += chunk;
    }
    committed = std::min(committed, max_slabs());
    if (committed != cap) {
      DUET_CUDA_TRY(::duet::gpu::copy_to_device(&d_counters_->capacity, &committed, 8));
      h_counters_->capacity = committed;  // only once the device has it
      ++grows_;
    }
    if (committed >= want) return Status::Ok();
    return failure.ok() ? Status::ResourceExhausted("slab pool limit reached") : failure;
  }

  Config config_;
  gpu::Stream stream_;
  cudaStream_t stream_handle_ = nullptr;
  /// Exclusive for execute(), pool growth and stats; shared for lanes while their kernels run.
  mutable std::shared_mutex mutex_;
  /// Overflow slabs lanes may still take before a lane must re-read the pool (an underestimate).
  std::atomic<std::int64_t> lane_budget_{0};
  friend class GpuLane<W>;
  std::uint64_t buckets_ = 0;
  unsigned chunk_shift_ = 16;
  int grid_ = 1;
  using Kernel = void (*)(MapView<W>, const Op*, const std::uint64_t*, const std::uint64_t*, OpStatus*,
                          std::uint64_t*, std::uint64_t, unsigned, bool, unsigned);
  Kernel kernel_ = nullptr;  ///< batch_kernel with the register budget chosen at init
  unsigned prefetch_ = 1;  ///< DUET_LSLAB_PREFETCH: value-line prefetch, 0 none, 1 writes, 2 all
  Slab<W>** d_chunks_ = nullptr;
  std::vector<Slab<W>*> h_chunks_;
  PoolCounters* d_counters_ = nullptr;
  PoolCounters* h_counters_ = nullptr;
  std::uint64_t grows_ = 0;
  MapView<W> view_;
  StagedBatch staging_;  ///< execute()'s arrays
};

/// A GPU lane: pinned host staging, device arrays and a stream of its own; kernels of
/// different lanes overlap, and a lane's copies overlap other lanes' kernels.
template <unsigned W>
class GpuLane final : public Lane {
 public:
  explicit GpuLane(GpuMap<W>* map) : map_(map) {}

  Status init() {
    Status s = stream_.create();
    st_ = static_cast<cudaStream_t>(stream_.handle());
    return s;
  }

  Status reserve(std::size_t n, Op** ops, std::uint64_t** keys, std::uint64_t** values) override {
    Status s = staged_.reserve(n);
    if (!s.ok()) return s;
    *ops = staged_.h_ops;
    *keys = staged_.h_keys;
    *values = staged_.h_values;
    return Status::Ok();
  }

  Status run(std::size_t n, const OpStatus** status, const std::uint64_t** out) override {
    if (n > staged_.capacity) return Status::InvalidArgument("lane run of more requests than reserved");
    *status = staged_.h_status;
    *out = staged_.h_out;
    if (n == 0) return Status::Ok();
    Status s = map_->take_lane_budget(static_cast<std::int64_t>(n / (W - 2) + 1));
    if (!s.ok()) return s;
    Batch d = staged_.device_batch(n, true);
    BatchResult dr = staged_.device_result();
    {
      std::shared_lock<std::shared_mutex> lk(map_->mutex_);
      s = staged_.copy_in(n, true, st_);
      if (s.ok()) s = map_->launch_shared(d, dr, st_);
      if (s.ok()) s = staged_.copy_out(n, st_);
      if (!s.ok()) {
        cudaStreamSynchronize(st_);
        cudaGetLastError();
        return s;
      }
    }
    const std::size_t retries = std::count(staged_.h_status, staged_.h_status + n, OpStatus::kRetry);
    if (retries == 0) return Status::Ok();
    return map_->rerun_retries(d, dr, staged_.h_status, staged_.h_out, st_, retries);
  }

 private:
  GpuMap<W>* map_;
  gpu::Stream stream_;
  cudaStream_t st_ = nullptr;
  StagedBatch staged_;
};

template <unsigned W>
Status GpuMap<W>::open_lane(std::unique_ptr<Lane>* out) {
  auto lane = std::make_unique<GpuLane<W>>(this);
  Status s = lane->init();
  if (!s.ok()) return s;
  *out = std::move(lane);
  return Status::Ok();
}

}  // namespace

Status make_gpu_map(const Config& c, std::unique_ptr<Map>* out, unsigned slab_width) {
  if (!gpu::device().present) return Status::Unavailable("GPU map unavailable: " + gpu::device().reason);
  return detail::make_map<GpuMap>(c, out, slab_width);
}

}  // namespace duet::lslab
