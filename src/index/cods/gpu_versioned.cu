// The GPU batch driver of the CODS versioned B-link tree (see gpu_versioned.hpp for the contract).
//
// Pool (gpu_pool.cuh): one node size (a data leaf, the largest; index nodes take a slot each),
// grown between runs when a batch's requests found it empty (run()).
// Nodes a batch retires (cut saved versions, discarded spares) are recycled after each batch
// (batches are serialized), so a retired node is reused only once no batch can read it.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "gpu/cuda_try.hpp"
#include "gpu/device.hpp"
#include "index/cods/gpu_mixed.cuh"
#include "index/cods/gpu_pool.cuh"
#include "index/cods/gpu_versioned.hpp"
#include "index/cods/versioned_blink_tree.hpp"

namespace duet::cods::ds {
namespace {

constexpr unsigned kBlockThreads = 256;
using gpu_pool::DeviceArray;
using gpu_pool::Pool;
using gpu_pool::PoolEnv;


/// The algorithm's clock for batch t (see versioned_blink_tree.hpp): `live` (GPU memory, n
/// sorted stamps) holds every snapshot that may still be read while the batch runs or after
/// it: the held ones (hold_snapshot) and, when the batch's RANGEs read the state before it,
/// t - 1. With none (kSave false, a compile-time switch) the kernel has no copy-on-write path.
template <bool kSave>
struct BatchClock {
  std::uint64_t t;
  const std::uint64_t* live;
  std::uint64_t n;
  template <class Group>
  __device__ std::uint64_t stamp(const Group&) const { return t; }
  template <class Group>
  __device__ std::uint64_t oldest(const Group&) const { return kSave ? live[0] : t; }
  /// Whether a live snapshot lies in [c, stamp): a binary search of `live`.
  template <class Group>
  __device__ bool needed(const Group&, std::uint64_t c, std::uint64_t stamp) const {
    if (!kSave) return false;
    std::uint64_t lo = 0, hi = n;
    while (lo < hi) {
      const std::uint64_t mid = (lo + hi) / 2;
      if (live[mid] < c) lo = mid + 1;
      else hi = mid;
    }
    return lo < n && live[lo] < stamp;
  }
};

/// Nodes 0 (index leaf) and 1 (first data leaf) of the pool.
template <class Tree>
__global__ void init_kernel(typename Tree::Leaf* nodes, VersionedRoot* root) {
  Tree::init(root, reinterpret_cast<typename Tree::Node*>(nodes), nodes + 1);
}

/// Sets *ranges (zeroed before) when the batch holds a RANGE.
__global__ void scan_ranges_kernel(const Op* ops, std::uint64_t n, std::uint64_t* ranges) {
  bool any = false;
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::uint64_t(gridDim.x) * blockDim.x)
    any |= ops[i] == kOpRange;
  if (__syncthreads_or(any) && threadIdx.x == 0) *ranges = 1;
}

/// One request of a batch on group g (a tile or one lane): GET, INSERT and REMOVE on the latest
/// state, RANGE (kRanges only) at snapshot `read_at` into the request's page. Every lane of g
/// returns the outcome.
template <class Tree, bool kRanges, class Group, class Env, class Clock>
__device__ DUET_INLINE TreeResult vtree_request(const Group& g, Env& env, Clock& clock, VersionedRoot* root,
                                                std::uint64_t read_at, Op op, std::uint64_t k, const std::uint64_t* values,
                                                std::uint64_t i, std::uint64_t* rkeys, std::uint64_t* rvalues,
                                                std::uint64_t limit) {
  if (op == Op::kGet) return Tree::get(g, env, root, k);
  if (op == Op::kInsert) return values ? Tree::insert(g, env, clock, root, k, values[i]) : TreeResult{OpStatus::kInvalid, 0};
  if (op == Op::kRemove) return Tree::remove(g, env, clock, root, k);
  if constexpr (kRanges) {
    if (op == kOpRange && values && values[i] >= k && (limit == 0 || (rkeys && rvalues))) {
      const std::uint64_t base = i * limit;
      const std::uint64_t c = Tree::range(g, env, root, read_at, k, values[i], limit,
                                          [&](std::uint64_t at, std::uint64_t key, std::uint64_t v) {
                                            rkeys[base + at] = key;
                                            rvalues[base + at] = v;
                                          });
      return {OpStatus::kFound, c};
    }
  }
  return {OpStatus::kInvalid, 0};
}

/// Stores request i's outcome (one lane does).
__device__ DUET_INLINE void vtree_store(std::uint64_t i, TreeResult r, OpStatus* status, std::uint64_t* out,
                                        std::uint64_t* retries) {
  status[i] = r.status;
  out[i] = r.status == OpStatus::kFound ? r.value : 0;
  if (r.status == OpStatus::kRetry) atomic_add(retries, 1, Order::relaxed);
}

/// Who runs a request in vtree_kernel: a tile of G lanes, one lane, or mixed (GpuMode).
enum class Runner { kTile, kLane, kMixed };

/// Three blocks of 256 threads per SM, as the plain tree's kernel gets with its 74 registers: left
/// to itself the compiler gave this one 96-106, two blocks per SM, and GETs ran at 0.75x the
/// plain tree's rate (H100, 10^7 keys).
/// Tree runs on tiles of G lanes, Tree1 (the same nodes) on one lane. kRanges: the batch holds
/// RANGEs, which read snapshot `read_at`; kSave: see BatchClock.
template <class Tree, class Tree1, unsigned G, Runner kRun, class Env, bool kRanges, bool kSave>
__global__ void __launch_bounds__(kBlockThreads, 3) vtree_kernel(VersionedRoot* root, Env env, BatchClock<kSave> clock,
                             std::uint64_t read_at, const Op* ops, const std::uint64_t* keys,
                             const std::uint64_t* values, OpStatus* status, std::uint64_t* out,
                             std::uint64_t* rkeys, std::uint64_t* rvalues, std::uint64_t limit, std::uint64_t n,
                             std::uint64_t* retries) {
  static_assert(kSave || !kRanges, "a batch with RANGEs keeps the snapshot they read");
  const std::uint64_t thread = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x;
  const std::uint64_t threads = std::uint64_t(gridDim.x) * blockDim.x;
  if constexpr (kRun == Runner::kLane) {
    const CpuThread g{};
    for (std::uint64_t i = thread; i < n; i += threads)
      vtree_store(i, vtree_request<Tree1, kRanges>(g, env, clock, root, read_at, ops[i], keys[i], values, i, rkeys,
                                                   rvalues, limit),
                  status, out, retries);
  } else if constexpr (kRun == Runner::kTile) {
    const auto g = GpuTile<G>::of_this_block();
    for (std::uint64_t i = thread / G; i < n; i += threads / G) {
      const TreeResult r =
          vtree_request<Tree, kRanges>(g, env, clock, root, read_at, ops[i], keys[i], values, i, rkeys, rvalues, limit);
      if (g.is_leader()) vtree_store(i, r, status, out, retries);
    }
  } else {
    const auto g = GpuTile<G>::of_this_block();
    mixed_rounds(
        g, ops, keys, n, [](Op op) { return op == Op::kGet || op == kOpRange; },
        [&](unsigned src, std::uint64_t j, std::uint64_t i, Op op, std::uint64_t k) {
          const TreeResult r = vtree_request<Tree, kRanges>(g, env, clock, root, read_at,
                                                            static_cast<Op>(g.shfl(static_cast<unsigned>(op), src)),
                                                            g.shfl(k, src), values, j, rkeys, rvalues, limit);
          if (g.lane() == src) vtree_store(i, r, status, out, retries);
        },
        [&](std::uint64_t i, Op op, std::uint64_t k) {
          vtree_store(i, vtree_request<Tree1, kRanges>(CpuThread{}, env, clock, root, read_at, op, k, values, i, rkeys,
                                                       rvalues, limit),
                      status, out, retries);
        });
  }
}

/// G is the tile whose node layout the pool holds; config.group 1 runs every request on one lane
/// and kMixed runs updates on one lane (cods::CpuThread), both over the same nodes.
template <unsigned K, unsigned G, Regime R>
class VersionedImpl final : public GpuVersionedTree {
  using Tree = VersionedBLinkTree<K, GpuTile<G>, R>;
  using Tree1 = VersionedBLinkTree<K, CpuThread, R>;
  using Leaf = typename Tree::Leaf;
  using Env = PoolEnv<Leaf>;
  static_assert(sizeof(typename Tree1::Leaf) == sizeof(Leaf) && alignof(typename Tree1::Leaf) == alignof(Leaf) &&
                    offsetof(typename Tree1::Leaf, prev) == offsetof(Leaf, prev),
                "the one-lane group must see the tile's node layout");

 public:
  explicit VersionedImpl(const GpuVersionedConfig& c) : config_(c) {}
  ~VersionedImpl() override {
    if (stream_) cudaStreamDestroy(stream_);
    cudaFree(root_);
    cudaFree(ranges_);
    cudaFree(retries_);
  }

  Status init() {
    // Nodes 0 and 1 are init_kernel's.
    const Status pooled = pool_.init(config_.pool_nodes, 2, config_.pool_max_nodes);
    if (!pooled.ok()) return pooled;
    DUET_CUDA_TRY(cudaMalloc(&root_, sizeof(VersionedRoot)));
    DUET_CUDA_TRY(cudaMalloc(&ranges_, 8));
    DUET_CUDA_TRY(cudaMalloc(&retries_, 8));
    DUET_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    init_kernel<Tree><<<1, 1>>>(pool_.env().nodes, root_);
    DUET_CUDA_TRY(cudaGetLastError());
    DUET_CUDA_TRY(cudaDeviceSynchronize());
    return Status::Ok();
  }

  Status execute(const Batch& b, VersionedBatchResult& r) override { return execute_host(b, r, nullptr); }
  Status execute_at(std::uint64_t snapshot, const Batch& b, VersionedBatchResult& r) override {
    return execute_host(b, r, &snapshot);
  }

  std::uint64_t hold_snapshot() override {
    std::lock_guard<std::mutex> lk(mutex_);
    live_.insert(stamp_);
    return stamp_;
  }
  Status release_snapshot(std::uint64_t snapshot) override {
    std::lock_guard<std::mutex> lk(mutex_);
    const auto it = live_.find(snapshot);
    if (it == live_.end()) return Status::InvalidArgument("snapshot " + std::to_string(snapshot) + " is not held");
    live_.erase(it);
    return Status::Ok();
  }
  std::uint64_t held_snapshots() override {
    std::lock_guard<std::mutex> lk(mutex_);
    return live_.size();
  }

  Status execute_resident(const Batch& b, VersionedBatchResult& r) override {
    if (b.n == 0) return Status::Ok();
    if (!b.ops || !b.keys || !r.status || !r.values) return Status::InvalidArgument("batch array is null");
    std::uint64_t retries = 0;
    Status s = run(b, r, &retries, nullptr);
    return s.ok() ? exhausted(retries) : s;
  }

  std::uint64_t nodes_used() const override { return pool_.used(); }
  std::uint64_t nodes_recycled() const override { return pool_.state().recycled; }
  std::uint64_t pool_capacity() const override { return pool_.capacity(); }

 private:
  /// execute() and execute_at(): copies the batch in, runs it (RANGEs at *at when given), copies
  /// the outcomes out.
  Status execute_host(const Batch& b, VersionedBatchResult& r, const std::uint64_t* at) {
    const Status checked = check_versioned_batch(b, r);
    if (!checked.ok() || b.n == 0) return checked;
    const std::uint64_t n = b.n, lim = r.range_limit;
    bool ranges = false;
    for (std::uint64_t i = 0; i < n && !ranges; ++i) ranges = b.ops[i] == kOpRange;
    DeviceArray ops, keys, values, status, out, rk, rv;
    DUET_CUDA_TRY(ops.alloc(n * sizeof(Op)));
    DUET_CUDA_TRY(keys.alloc(n * 8));
    if (b.values) DUET_CUDA_TRY(values.alloc(n * 8));
    DUET_CUDA_TRY(status.alloc(n * sizeof(OpStatus)));
    DUET_CUDA_TRY(out.alloc(n * 8));
    if (ranges) {
      DUET_CUDA_TRY(rk.alloc(n * lim * 8));
      DUET_CUDA_TRY(rv.alloc(n * lim * 8));
    }
    // On stream_, ahead of the kernels that read them: a cudaMemcpy from pageable memory may
    // return before its DMA lands, and stream_ (non-blocking) is not ordered after it.
    DUET_CUDA_TRY(cudaMemcpyAsync(ops.p, b.ops, n * sizeof(Op), cudaMemcpyHostToDevice, stream_));
    DUET_CUDA_TRY(cudaMemcpyAsync(keys.p, b.keys, n * 8, cudaMemcpyHostToDevice, stream_));
    if (b.values) DUET_CUDA_TRY(cudaMemcpyAsync(values.p, b.values, n * 8, cudaMemcpyHostToDevice, stream_));
    const Batch db{static_cast<const Op*>(ops.p), static_cast<const std::uint64_t*>(keys.p),
                   b.values ? static_cast<const std::uint64_t*>(values.p) : nullptr, n};
    VersionedBatchResult dr{static_cast<OpStatus*>(status.p), static_cast<std::uint64_t*>(out.p),
                            ranges ? static_cast<std::uint64_t*>(rk.p) : nullptr,
                            ranges ? static_cast<std::uint64_t*>(rv.p) : nullptr, ranges ? lim : 0};
    std::uint64_t retries = 0;
    const Status ran = run(db, dr, &retries, at);
    if (!ran.ok()) return ran;
    DUET_CUDA_TRY(cudaMemcpy(r.status, dr.status, n * sizeof(OpStatus), cudaMemcpyDeviceToHost));
    DUET_CUDA_TRY(cudaMemcpy(r.values, dr.values, n * 8, cudaMemcpyDeviceToHost));
    if (ranges && lim > 0) {
      DUET_CUDA_TRY(cudaMemcpy(r.range_keys, dr.range_keys, n * lim * 8, cudaMemcpyDeviceToHost));
      DUET_CUDA_TRY(cudaMemcpy(r.range_values, dr.range_values, n * lim * 8, cudaMemcpyDeviceToHost));
    }
    return exhausted(retries);
  }

  Status exhausted(std::uint64_t retries) const { return gpu_pool::exhausted(pool_.capacity(), retries); }

  /// One batch at a time: stamps it, runs it (run_once); while requests come back kRetry because
  /// the pool's fresh nodes ran out, grows the pool when fewer than half of the round's requests
  /// were applied (gpu_pool::grow_before_rerun) and runs those requests again as a batch of
  /// their own with the same stamp (see gpu_versioned.hpp). Stops when none is left, when the
  /// pool cannot grow (*retries stay marked), or when requests give up for another reason.
  /// With `at`, the batch's RANGEs read held snapshot *at (InvalidArgument, nothing run, when it
  /// is not held).
  Status run(const Batch& d, VersionedBatchResult& dr, std::uint64_t* retries, const std::uint64_t* at) {
    std::lock_guard<std::mutex> lk(mutex_);
    if (at && live_.find(*at) == live_.end())
      return Status::InvalidArgument("snapshot " + std::to_string(*at) + " is not held");
    const std::uint64_t t = ++stamp_;
    Status s = run_once(t, d, dr, retries, at);
    std::uint64_t ran = d.n;
    while (s.ok() && *retries > 0) {
      if (!pool_.fresh_exhausted()) break;
      if (gpu_pool::grow_before_rerun(ran, *retries) && !pool_.grow().ok()) break;
      ran = *retries;
      gpu_pool::RetryBatch rb;
      s = rb.gather(stream_, d, dr.status, *retries);
      if (!s.ok()) break;
      VersionedBatchResult subr{rb.status(), rb.values(), nullptr, nullptr, 0};
      s = run_once(t, rb.batch(), subr, retries, at);
      if (s.ok()) s = rb.scatter(dr.status, dr.values);
    }
    return s;
  }

  /// Runs batch d with stamp t: scan for RANGEs, publish the live snapshots, run, recycle
  /// (mutex_ held). RANGEs read *at, or t - 1 without it.
  Status run_once(std::uint64_t t, const Batch& d, VersionedBatchResult& dr, std::uint64_t* retries,
                  const std::uint64_t* at) {
    DUET_CUDA_TRY(cudaMemsetAsync(ranges_, 0, 8, stream_));
    DUET_CUDA_TRY(cudaMemsetAsync(retries_, 0, 8, stream_));
    const std::uint64_t sms = std::uint64_t(std::max(1, gpu::device().sm_count));
    const unsigned scan_grid = static_cast<unsigned>(std::min<std::uint64_t>((d.n + 1023) / 1024, sms * 4));
    scan_ranges_kernel<<<std::max(1u, scan_grid), 1024, 0, stream_>>>(d.ops, d.n, ranges_);
    DUET_CUDA_TRY(cudaGetLastError());
    std::uint64_t ranges = 0;
    DUET_CUDA_TRY(cudaMemcpyAsync(&ranges, ranges_, 8, cudaMemcpyDeviceToHost, stream_));
    DUET_CUDA_TRY(cudaStreamSynchronize(stream_));
    // A tile per request, or (one lane, mixed) a lane per request.
    const std::uint64_t lanes = config_.group == 1 || config_.mode == GpuMode::kMixed ? d.n : d.n * G;
    const unsigned grid = std::max(1u, static_cast<unsigned>(std::min<std::uint64_t>(
                                           (lanes + kBlockThreads - 1) / kBlockThreads, sms * 8)));
    // The snapshots that may be read during or after the batch, sorted, in GPU memory (the
    // previous batch has ended: run_once synchronises before it returns).
    std::vector<std::uint64_t> live(live_.begin(), live_.end());
    if (ranges && !at) live.push_back(t - 1);
    std::sort(live.begin(), live.end());
    live.erase(std::unique(live.begin(), live.end()), live.end());
    if (live.size() > live_capacity_) {
      live_capacity_ = std::max<std::size_t>(live.size(), 2 * live_capacity_);
      DUET_CUDA_TRY(live_dev_.alloc(live_capacity_ * 8));
    }
    // Stream-ordered before the kernel (live outlives the stream synchronisation below). A plain
    // cudaMemcpy from pageable memory may return before its DMA lands, and the kernel on the
    // non-blocking stream_ is not ordered after it: its first updates could read the previous
    // batch's live set (t - 2), save nothing for leaves stamped t - 1, and leave the batch's
    // RANGEs at t - 1 an older version (short pages) or none (the walk to the origin loops).
    if (!live.empty())
      DUET_CUDA_TRY(cudaMemcpyAsync(live_dev_.p, live.data(), live.size() * 8, cudaMemcpyHostToDevice, stream_));
    const auto* lp = static_cast<const std::uint64_t*>(live_dev_.p);
    const std::uint64_t read_at = at ? *at : t - 1;
    auto launch = [&](auto kernel, auto clock) {
      kernel<<<grid, kBlockThreads, 0, stream_>>>(root_, pool_.env(), clock, read_at, d.ops, d.keys, d.values,
                                                  dr.status, dr.values, dr.range_keys, dr.range_values,
                                                  dr.range_limit, d.n, retries_);
    };
    auto launch_runner = [&](auto runner) {
      constexpr Runner kRun = decltype(runner)::value;
      if (ranges)
        launch(vtree_kernel<Tree, Tree1, G, kRun, Env, true, true>, BatchClock<true>{t, lp, live.size()});
      else if (!live.empty())
        launch(vtree_kernel<Tree, Tree1, G, kRun, Env, false, true>, BatchClock<true>{t, lp, live.size()});
      else
        launch(vtree_kernel<Tree, Tree1, G, kRun, Env, false, false>, BatchClock<false>{t, nullptr, 0});
    };
    if (config_.group == 1)
      launch_runner(std::integral_constant<Runner, Runner::kLane>{});
    else if (config_.mode == GpuMode::kMixed)
      launch_runner(std::integral_constant<Runner, Runner::kMixed>{});
    else
      launch_runner(std::integral_constant<Runner, Runner::kTile>{});
    DUET_CUDA_TRY(cudaGetLastError());
    const Status recycled = pool_.recycle(stream_);
    if (!recycled.ok()) return recycled;
    DUET_CUDA_TRY(cudaMemcpyAsync(retries, retries_, 8, cudaMemcpyDeviceToHost, stream_));
    DUET_CUDA_TRY(cudaStreamSynchronize(stream_));
    return Status::Ok();
  }

  GpuVersionedConfig config_;
  Pool<Leaf> pool_;
  VersionedRoot* root_ = nullptr;
  std::uint64_t* ranges_ = nullptr;  ///< set by scan_ranges_kernel when the batch holds a RANGE
  std::uint64_t* retries_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::uint64_t stamp_ = 0;  ///< the last batch's stamp (host side; the tree's snapshots)
  std::mutex mutex_;         ///< one batch at a time; guards live_
  std::multiset<std::uint64_t> live_;  ///< held snapshots (hold_snapshot)
  DeviceArray live_dev_;               ///< the live snapshots of the running batch
  std::size_t live_capacity_ = 0;
};

template <unsigned K, unsigned G, Regime R>
Status make_one(const GpuVersionedConfig& c, std::unique_ptr<GpuVersionedTree>* out) {
  return gpu_pool::make_driver<GpuVersionedTree, VersionedImpl<K, G, R>>(c, out);
}

template <unsigned K, unsigned G>
Status make_regime(const GpuVersionedConfig& c, std::unique_ptr<GpuVersionedTree>* out) {
  return c.regime == Regime::kFullyAtomic ? make_one<K, G, Regime::kFullyAtomic>(c, out)
                                          : make_one<K, G, Regime::kElementwise>(c, out);
}

}  // namespace

Status make_gpu_versioned_tree(const GpuVersionedConfig& c, std::unique_ptr<GpuVersionedTree>* out) {
  if (!out) return Status::InvalidArgument("out is null");
  // The same checks as a build without CUDA (gpu_batch_config.cpp); past them the pair is built.
  if (Status s = check_gpu_versioned_config(c); !s.ok()) return s;
  const unsigned k = c.keys_per_node;
  if (!gpu::device().present) return Status::Unavailable("no GPU: " + gpu::device().reason);
  // A one-lane configuration uses the node layout of K's own tile (the same words).
  if (k == 14) return make_regime<14, 16>(c, out);
  return make_regime<30, 32>(c, out);
}

}  // namespace duet::cods::ds
