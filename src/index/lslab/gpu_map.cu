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

#include "gpu/device.hpp"
#include "index/lslab/core.hpp"
#include "index/lslab/factory.hpp"
#include "index/lslab/map.hpp"

namespace duet::lslab {
namespace {

#define DUET_CUDA_TRY(expr)                                                                        \
  do {                                                                                             \
    cudaError_t duet_e = (expr);                                                                   \
    if (duet_e != cudaSuccess) {                                                                   \
      cudaGetLastError();                                                                          \
      return (duet_e == cudaErrorMemoryAllocation)                                                 \
                 ? Status::ResourceExhausted(std::string(#expr) + ": " + cudaGetErrorString(duet_e)) \
                 : Status::Internal(std::string(#expr) + ": " + cudaGetErrorString(duet_e));        \
    }                                                                                              \
  } while (0)

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
    free_staging();
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
    Status s = reserve_staging(batch.n);
    if (!s.ok()) return s;
    const std::size_t n = batch.n;
    // Stage through pinned buffers so the copies are asynchronous DMA at full bus speed.
    std::memcpy(h_ops_, batch.ops, n * sizeof(Op));
    std::memcpy(h_keys_, batch.keys, n * 8);
    if (batch.values) std::memcpy(h_values_, batch.values, n * 8);
    DUET_CUDA_TRY(cudaMemcpyAsync(d_ops_, h_ops_, n * sizeof(Op), cudaMemcpyHostToDevice, stream_handle_));
    DUET_CUDA_TRY(cudaMemcpyAsync(d_keys_, h_keys_, n * 8, cudaMemcpyHostToDevice, stream_handle_));
    if (batch.values)
      DUET_CUDA_TRY(cudaMemcpyAsync(d_values_, h_values_, n * 8, cudaMemcpyHostToDevice, stream_handle_));
    Batch db{d_ops_, d_keys_, batch.values ? d_values_ : nullptr, n};
    BatchResult dr{d_status_, d_out_};
    s = run_locked(db, dr);
    if (!s.ok() && s.code() != StatusCode::kResourceExhausted) return s;
    DUET_CUDA_TRY(cudaMemcpyAsync(h_status_, d_status_, n * sizeof(OpStatus), cudaMemcpyDeviceToHost, stream_handle_));
    DUET_CUDA_TRY(cudaMemcpyAsync(h_out_, d_out_, n * 8, cudaMemcpyDeviceToHost, stream_handle_));
    DUET_CUDA_TRY(cudaStreamSynchronize(stream_handle_));
    std::memcpy(result.status, h_status_, n * sizeof(OpStatus));
    std::memcpy(result.values, h_out_, n * 8);
    return s;
  }


 public:
  PoolStats stats() const override {
    std::unique_lock<std::shared_mutex> lk(mutex_);
    PoolStats s;
    s.buckets = buckets_;
    s.pool_capacity = h_counters_->capacity;
    s.pool_handed_out = h_counters_->fresh_next;
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
    const std::uint64_t used = h_counters_->fresh_next;
    const std::uint64_t per_chunk = std::uint64_t(1) << chunk_shift_;
    for (std::size_t c = 0; s.ok() && c < h_chunks_.size() && c * per_chunk < used; ++c)
      s = scan(h_chunks_[c], std::min(per_chunk, used - c * per_chunk));
    return s;
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
      std::uint64_t avail = h_counters_->capacity - h_counters_->fresh_next + h_counters_->free_slabs();
      const std::uint64_t want = std::max<std::uint64_t>(std::uint64_t(need) * 8, 1u << 14);
      if (avail < want) {
        Status s = grow(h_counters_->capacity + (want - avail));
        if (!s.ok() && s.code() != StatusCode::kResourceExhausted) return s;
        avail = h_counters_->capacity - h_counters_->fresh_next + h_counters_->free_slabs();
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
    const std::uint64_t avail = h_counters_->capacity - h_counters_->fresh_next + h_counters_->free_slabs();
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
      DUET_CUDA_TRY(cudaMemcpy(d_chunks_ + k, &h_chunks_.back(), sizeof(Slab<W>*), cudaMemcpyHostToDevice));
      committed += chunk;
    }
    committed = std::min(committed, max_slabs());
    if (committed != cap) {
      DUET_CUDA_TRY(cudaMemcpy(&d_counters_->capacity, &committed, 8, cudaMemcpyHostToDevice));
      h_counters_->capacity = committed;  // only once the device has it
      ++grows_;
    }
    if (committed >= want) return Status::Ok();
    return failure.ok() ? Status::ResourceExhausted("slab pool limit reached") : failure;
  }

  Status reserve_staging(std::size_t n) {
    if (n <= staging_n_) return Status::Ok();
    free_staging();
    h_ops_ = static_cast<Op*>(pinned_.acquire(n));
    h_status_ = static_cast<OpStatus*>(pinned_.acquire(n));
    h_keys_ = static_cast<std::uint64_t*>(pinned_.acquire(n * 8));
    h_values_ = static_cast<std::uint64_t*>(pinned_.acquire(n * 8));
    h_out_ = static_cast<std::uint64_t*>(pinned_.acquire(n * 8));
    if (!h_ops_ || !h_status_ || !h_keys_ || !h_values_ || !h_out_) {
      free_staging();
      return Status::ResourceExhausted("cannot allocate pinned staging for " + std::to_string(n) + " requests");
    }
    DUET_CUDA_TRY(cudaMalloc(&d_ops_, n));
    DUET_CUDA_TRY(cudaMalloc(&d_status_, n));
    DUET_CUDA_TRY(cudaMalloc(&d_keys_, n * 8));
    DUET_CUDA_TRY(cudaMalloc(&d_values_, n * 8));
    DUET_CUDA_TRY(cudaMalloc(&d_out_, n * 8));
    staging_n_ = n;
    return Status::Ok();
  }

  void free_staging() {
    for (void* p : {static_cast<void*>(h_ops_), static_cast<void*>(h_status_), static_cast<void*>(h_keys_),
                    static_cast<void*>(h_values_), static_cast<void*>(h_out_)})
      pinned_.release(p);
    for (void* p : {static_cast<void*>(d_ops_), static_cast<void*>(d_status_), static_cast<void*>(d_keys_),
                    static_cast<void*>(d_values_), static_cast<void*>(d_out_)})
      cudaFree(p);
    h_ops_ = nullptr, h_status_ = nullptr, h_keys_ = h_values_ = h_out_ = nullptr;
    d_ops_ = nullptr, d_status_ = nullptr, d_keys_ = d_values_ = d_out_ = nullptr;
    staging_n_ = 0;
  }

  Config config_;
  gpu::PinnedPool pinned_;  ///< staging buffers; declared first so it outlives their release
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
  std::size_t staging_n_ = 0;
  Op* h_ops_ = nullptr;
  OpStatus* h_status_ = nullptr;
  std::uint64_t *h_keys_ = nullptr, *h_values_ = nullptr, *h_out_ = nullptr;
  Op* d_ops_ = nullptr;
  OpStatus* d_status_ = nullptr;
  std::uint64_t *d_keys_ = nullptr, *d_values_ = nullptr, *d_out_ = nullptr;
};

/// A GPU lane: pinned host staging, device arrays and a stream of its own; kernels of
/// different lanes overlap, and a lane's copies overlap other lanes' kernels.
template <unsigned W>
class GpuLane final : public Lane {
 public:
  explicit GpuLane(GpuMap<W>* map) : map_(map) {}
  ~GpuLane() override { release(); }

  Status init() {
    Status s = stream_.create();
    st_ = static_cast<cudaStream_t>(stream_.handle());
    return s;
  }

  Status reserve(std::size_t n, Op** ops, std::uint64_t** keys, std::uint64_t** values) override {
    if (n > cap_) {
      release();
      h_ops_ = static_cast<Op*>(gpu::alloc_host(n));
      h_status_ = static_cast<OpStatus*>(gpu::alloc_host(n));
      h_keys_ = static_cast<std::uint64_t*>(gpu::alloc_host(n * 8));
      h_values_ = static_cast<std::uint64_t*>(gpu::alloc_host(n * 8));
      h_out_ = static_cast<std::uint64_t*>(gpu::alloc_host(n * 8));
      cudaError_t e = cudaMalloc(&d_ops_, n);
      if (e == cudaSuccess) e = cudaMalloc(&d_status_, n);
      if (e == cudaSuccess) e = cudaMalloc(&d_keys_, n * 8);
      if (e == cudaSuccess) e = cudaMalloc(&d_values_, n * 8);
      if (e == cudaSuccess) e = cudaMalloc(&d_out_, n * 8);
      if (e != cudaSuccess || !h_ops_ || !h_status_ || !h_keys_ || !h_values_ || !h_out_) {
        cudaGetLastError();
        release();
        return Status::ResourceExhausted("cannot allocate lane buffers for " + std::to_string(n) + " requests");
      }
      cap_ = n;
    }
    *ops = h_ops_;
    *keys = h_keys_;
    *values = h_values_;
    return Status::Ok();
  }

  Status run(std::size_t n, const OpStatus** status, const std::uint64_t** out) override {
    if (n > cap_) return Status::InvalidArgument("lane run of more requests than reserved");
    *status = h_status_;
    *out = h_out_;
    if (n == 0) return Status::Ok();
    Status s = map_->take_lane_budget(static_cast<std::int64_t>(n / (W - 2) + 1));
    if (!s.ok()) return s;
    Batch d{d_ops_, d_keys_, d_values_, n};
    BatchResult dr{d_status_, d_out_};
    {
      std::shared_lock<std::shared_mutex> lk(map_->mutex_);
      s = copy_run_copy(d, dr, n);
      if (!s.ok()) {
        cudaStreamSynchronize(st_);
        cudaGetLastError();
        return s;
      }
    }
    const std::size_t retries = std::count(h_status_, h_status_ + n, OpStatus::kRetry);
    if (retries == 0) return Status::Ok();
    return map_->rerun_retries(d, dr, h_status_, h_out_, st_, retries);
  }

 private:
  Status copy_run_copy(const Batch& d, BatchResult& dr, std::size_t n) {
    DUET_CUDA_TRY(cudaMemcpyAsync(d_ops_, h_ops_, n, cudaMemcpyHostToDevice, st_));
    DUET_CUDA_TRY(cudaMemcpyAsync(d_keys_, h_keys_, n * 8, cudaMemcpyHostToDevice, st_));
    DUET_CUDA_TRY(cudaMemcpyAsync(d_values_, h_values_, n * 8, cudaMemcpyHostToDevice, st_));
    Status s = map_->launch_shared(d, dr, st_);
    if (!s.ok()) return s;
    DUET_CUDA_TRY(cudaMemcpyAsync(h_status_, d_status_, n, cudaMemcpyDeviceToHost, st_));
    DUET_CUDA_TRY(cudaMemcpyAsync(h_out_, d_out_, n * 8, cudaMemcpyDeviceToHost, st_));
    DUET_CUDA_TRY(cudaStreamSynchronize(st_));
    return Status::Ok();
  }

  void release() {
    gpu::free_host(h_ops_);
    gpu::free_host(h_status_);
    gpu::free_host(h_keys_);
    gpu::free_host(h_values_);
    gpu::free_host(h_out_);
    cudaFree(d_ops_);
    cudaFree(d_status_);
    cudaFree(d_keys_);
    cudaFree(d_values_);
    cudaFree(d_out_);
    h_ops_ = nullptr;
    h_status_ = nullptr;
    h_keys_ = h_values_ = h_out_ = nullptr;
    d_ops_ = nullptr;
    d_status_ = nullptr;
    d_keys_ = d_values_ = d_out_ = nullptr;
    cap_ = 0;
  }

  GpuMap<W>* map_;
  gpu::Stream stream_;
  cudaStream_t st_ = nullptr;
  std::size_t cap_ = 0;
  Op* h_ops_ = nullptr;
  OpStatus* h_status_ = nullptr;
  std::uint64_t *h_keys_ = nullptr, *h_values_ = nullptr, *h_out_ = nullptr;
  Op* d_ops_ = nullptr;
  OpStatus* d_status_ = nullptr;
  std::uint64_t *d_keys_ = nullptr, *d_values_ = nullptr, *d_out_ = nullptr;
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
