// The GPU batch driver of the CODS hash set (a list is one bucket) and B-link tree: the DUET_HD
// algorithms of hash_set.hpp and blink_tree.hpp run by cods::GpuTile<G>, one request per tile at
// a time, with nodes from the pool of gpu_pool.cuh. See gpu_batch.hpp for the contract.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <type_traits>

#include "gpu/cuda_try.hpp"
#include "gpu/host_copy.hpp"
#include "gpu/device.hpp"
#include "index/cods/blink_tree.hpp"
#include "index/cods/gpu_batch.hpp"
#include "index/cods/gpu_mixed.cuh"
#include "index/cods/gpu_pool.cuh"
#include "index/cods/hash_set.hpp"

namespace duet::cods::ds {
namespace {

constexpr unsigned kBlockThreads = 256;
using gpu_pool::DeviceArray;
using gpu_pool::Pool;
using gpu_pool::PoolEnv;
using gpu_pool::NoStamps;
using gpu_pool::Stamps;

template <class List>
__global__ void init_heads_kernel(typename List::Node* heads, std::uint64_t n) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::uint64_t(gridDim.x) * blockDim.x)
    List::init_head(heads + i);
}

/// Takes node 0 of the pool as the tree's first leaf and root.
template <class Tree>
__global__ void init_tree_kernel(typename Tree::Node* nodes, TreeRoot* root) {
  Tree::init_leaf(nodes);
  root->node = reinterpret_cast<std::uint64_t>(nodes);
}

/// The request a kernel's t-th slot runs: order[t] (GETs first, GpuConfig::order), or t without one.
__device__ inline std::uint64_t request_at(const std::uint32_t* order, std::uint64_t t) {
  return order ? order[t] : t;
}

/// One request per tile at a time; every lane reads the request, the leader writes the outcome.
template <class Set, unsigned G, class Env, class St>
__global__ void set_kernel(typename Set::View view, Env env, const Op* ops, const std::uint64_t* keys,
                           OpStatus* status, std::uint64_t* out, std::uint64_t n, const std::uint32_t* order,
                           std::uint64_t* retries, St stamps) {
  const auto g = GpuTile<G>::of_this_block();
  const std::uint64_t tiles = std::uint64_t(gridDim.x) * blockDim.x / G;
  for (std::uint64_t t = (blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x) / G; t < n; t += tiles) {
    const std::uint64_t i = request_at(order, t);
    stamps.invoke(g, i);
    const OpStatus s = Set::execute(g, env, view, ops[i], keys[i]);
    stamps.respond(g, i);
    if (g.is_leader()) {
      status[i] = s;
      out[i] = 0;
      if (s == OpStatus::kRetry) atomic_add(retries, 1, Order::relaxed);
    }
  }
}

/// The one-lane group: one request per GPU thread.
template <class Set1, class Env, class St>
__global__ void set_lane_kernel(typename Set1::View view, Env env, const Op* ops, const std::uint64_t* keys,
                                OpStatus* status, std::uint64_t* out, std::uint64_t n, const std::uint32_t* order,
                                std::uint64_t* retries, St stamps) {
  const CpuThread g{};
  const std::uint64_t threads = std::uint64_t(gridDim.x) * blockDim.x;
  for (std::uint64_t t = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; t < n; t += threads) {
    const std::uint64_t i = request_at(order, t);
    stamps.invoke(g, i);
    const OpStatus s = Set1::execute(g, env, view, ops[i], keys[i]);
    stamps.respond(g, i);
    status[i] = s;
    out[i] = 0;
    if (s == OpStatus::kRetry) atomic_add(retries, 1, Order::relaxed);
  }
}

/// Mixed mode's register cap: three blocks of kBlockThreads per SM (85 registers), as the
/// versioned tree's kernel has. Left to itself the compiler gave the mixed kernels the one-lane
/// code's 96-255 registers (a node fragment per lane), one or two blocks per SM, and their tile
/// GETs, most of a batch, ran at 0.40x of the tile kernel's where the capped versioned kernel
/// ran them at its tile's speed (bench/results/cods-h200-vtree-modes/). The one-lane kernels
/// keep their registers: capped, their fragments spill (the capped versioned tree's one-lane
/// K = 30 GETs ran at 0.48x the uncapped plain tree's).
constexpr int kMixedBlocksPerSm = 3;

/// Mixed mode (mixed_rounds): GETs on the tile, one coalesced read per node; updates on a lane.
template <class Set, class Set1, unsigned G, class Env, class St>
__global__ void __launch_bounds__(kBlockThreads, kMixedBlocksPerSm) set_mixed_kernel(typename Set::View view, typename Set1::View view1, Env env, const Op* ops,
                                 const std::uint64_t* keys, OpStatus* status, std::uint64_t* out, std::uint64_t n,
                                 std::uint64_t* retries, St stamps) {
  const auto g = GpuTile<G>::of_this_block();
  mixed_rounds(
      g, ops, keys, n, [](Op op) { return op == Op::kGet; },
      [&](unsigned src, std::uint64_t j, std::uint64_t i, Op, std::uint64_t k) {
        stamps.invoke(g, j);
        const OpStatus s = Set::execute(g, env, view, Op::kGet, g.shfl(k, src));
        stamps.respond(g, j);
        if (g.lane() == src) {
          status[i] = s;
          out[i] = 0;
        }
      },
      [&](std::uint64_t i, Op op, std::uint64_t k) {
        stamps.invoke(CpuThread{}, i);
        const OpStatus s = Set1::execute(CpuThread{}, env, view1, op, k);
        stamps.respond(CpuThread{}, i);
        status[i] = s;
        out[i] = 0;
        if (s == OpStatus::kRetry) atomic_add(retries, 1, Order::relaxed);
      });
}

template <class Tree1, class Env, class St>
__global__ void tree_lane_kernel(TreeRoot* root, Env env, const Op* ops, const std::uint64_t* keys,
                                 const std::uint64_t* values, OpStatus* status, std::uint64_t* out, std::uint64_t n,
                                 const std::uint32_t* order, std::uint64_t* retries, St stamps) {
  const CpuThread g{};
  const std::uint64_t threads = std::uint64_t(gridDim.x) * blockDim.x;
  for (std::uint64_t t = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; t < n; t += threads) {
    const std::uint64_t i = request_at(order, t);
    const Op op = ops[i];
    TreeResult r{OpStatus::kInvalid, 0};
    stamps.invoke(g, i);
    if (op != Op::kInsert || values != nullptr)
      r = Tree1::execute(g, env, root, op, keys[i], op == Op::kInsert ? values[i] : 0);
    stamps.respond(g, i);
    status[i] = r.status;
    out[i] = r.status == OpStatus::kFound ? r.value : 0;
    if (r.status == OpStatus::kRetry) atomic_add(retries, 1, Order::relaxed);
  }
}

template <class Tree, class Tree1, unsigned G, class Env, class St>
__global__ void __launch_bounds__(kBlockThreads, kMixedBlocksPerSm) tree_mixed_kernel(TreeRoot* root, Env env, const Op* ops, const std::uint64_t* keys,
                                  const std::uint64_t* values, OpStatus* status, std::uint64_t* out, std::uint64_t n,
                                  std::uint64_t* retries, St stamps) {
  const auto g = GpuTile<G>::of_this_block();
  mixed_rounds(
      g, ops, keys, n, [](Op op) { return op == Op::kGet; },
      [&](unsigned src, std::uint64_t j, std::uint64_t i, Op, std::uint64_t k) {
        stamps.invoke(g, j);
        const TreeResult r = Tree::execute(g, env, root, Op::kGet, g.shfl(k, src), 0);
        stamps.respond(g, j);
        if (g.lane() == src) {
          status[i] = r.status;
          out[i] = r.status == OpStatus::kFound ? r.value : 0;
        }
      },
      [&](std::uint64_t i, Op op, std::uint64_t k) {
        TreeResult r{OpStatus::kInvalid, 0};
        stamps.invoke(CpuThread{}, i);
        if (op != Op::kInsert || values != nullptr)
          r = Tree1::execute(CpuThread{}, env, root, op, k, op == Op::kInsert ? values[i] : 0);
        stamps.respond(CpuThread{}, i);
        status[i] = r.status;
        out[i] = r.status == OpStatus::kFound ? r.value : 0;
        if (r.status == OpStatus::kRetry) atomic_add(retries, 1, Order::relaxed);
      });
}

template <class Tree, unsigned G, class Env, class St>
__global__ void tree_kernel(TreeRoot* root, Env env, const Op* ops, const std::uint64_t* keys,
                            const std::uint64_t* values, OpStatus* status, std::uint64_t* out, std::uint64_t n,
                            const std::uint32_t* order, std::uint64_t* retries, St stamps) {
  const auto g = GpuTile<G>::of_this_block();
  const std::uint64_t tiles = std::uint64_t(gridDim.x) * blockDim.x / G;
  for (std::uint64_t t = (blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x) / G; t < n; t += tiles) {
    const std::uint64_t i = request_at(order, t);
    const Op op = ops[i];
    TreeResult r{OpStatus::kInvalid, 0};
    stamps.invoke(g, i);
    if (op != Op::kInsert || values != nullptr)
      r = Tree::execute(g, env, root, op, keys[i], op == Op::kInsert ? values[i] : 0);
    stamps.respond(g, i);
    if (g.is_leader()) {
      status[i] = r.status;
      out[i] = r.status == OpStatus::kFound ? r.value : 0;
      if (r.status == OpStatus::kRetry) atomic_add(retries, 1, Order::relaxed);
    }
  }
}

/// A stream of one batch, destroyed with it.
struct BatchStream {
  cudaStream_t s = nullptr;
  ~BatchStream() {
    if (s) cudaStreamDestroy(s);
  }
};

/// G is the tile whose node layout the pool holds; config.group 1 runs every request on one lane
/// and kMixed runs updates on one lane (cods::CpuThread), both over the same nodes: the one-lane
/// layout of K = 6, 14, 30 equals the tile's (K + 2 words fill a power of two).
template <unsigned K, unsigned G, Regime R, bool kIsTree>
class GpuImpl final : public GpuStructure {
  using Group = GpuTile<G>;
  using Set = HashSet<K, Group, R>;
  using Tree = BLinkTree<K, Group, R>;
  using Set1 = HashSet<K, CpuThread, R>;
  using Tree1 = BLinkTree<K, CpuThread, R>;
  using Node = std::conditional_t<kIsTree, typename Tree::Node, typename Set::Node>;
  using Node1 = std::conditional_t<kIsTree, typename Tree1::Node, typename Set1::Node>;
  static_assert(sizeof(Node1) == sizeof(Node) && alignof(Node1) == alignof(Node),
                "the one-lane group must see the tile's node layout");

 public:
  explicit GpuImpl(const GpuConfig& c) : config_(c) {}
  ~GpuImpl() override {
    cudaFree(heads_);
    cudaFree(root_);
    cudaFree(ticket_);
  }

  Status init() {
    // The tree takes node 0 as its first leaf.
    const Status pooled = pool_.init(config_.pool_nodes, kIsTree ? 1 : 0, config_.pool_max_nodes);
    if (!pooled.ok()) return pooled;
    DUET_CUDA_TRY(cudaMalloc(&ticket_, 8));
    DUET_CUDA_TRY(cudaMemset(ticket_, 0, 8));
    const int grid = std::max(1, gpu::device().sm_count) * 4;
    if constexpr (kIsTree) {
      DUET_CUDA_TRY(cudaMalloc(&root_, sizeof(TreeRoot)));
      init_tree_kernel<Tree><<<1, 1>>>(pool_.env().nodes, root_);
    } else {
      view_.buckets = config_.kind == GpuKind::kList ? 1 : config_.buckets;
      DUET_CUDA_TRY(cudaMalloc(&heads_, sizeof(typename Set::Node) * view_.buckets));
      view_.heads = heads_;
      init_heads_kernel<typename Set::List><<<grid, kBlockThreads>>>(heads_, view_.buckets);
    }
    DUET_CUDA_TRY(cudaGetLastError());
    DUET_CUDA_TRY(cudaDeviceSynchronize());
    return Status::Ok();
  }

  Status execute(const Batch& b, BatchResult& r) override {
    const Status checked = check(b, r);
    if (!checked.ok() || b.n == 0) return checked;
    const std::uint64_t n = b.n;
    const bool with_values = kIsTree && b.values != nullptr;
    DeviceArray ops, keys, values, status, out, stamps;
    DUET_CUDA_TRY(ops.alloc(n * sizeof(Op)));
    DUET_CUDA_TRY(keys.alloc(n * 8));
    if (with_values) DUET_CUDA_TRY(values.alloc(n * 8));
    DUET_CUDA_TRY(status.alloc(n * sizeof(OpStatus)));
    DUET_CUDA_TRY(out.alloc(n * 8));
    if (r.stamps) DUET_CUDA_TRY(stamps.alloc(n * 16));
    // Landed before the batch's kernels, which run on non-blocking streams (gpu/host_copy.hpp).
    DUET_CUDA_TRY(::duet::gpu::copy_to_device(ops.p, b.ops, n * sizeof(Op)));
    DUET_CUDA_TRY(::duet::gpu::copy_to_device(keys.p, b.keys, n * 8));
    if (with_values) DUET_CUDA_TRY(::duet::gpu::copy_to_device(values.p, b.values, n * 8));
    const Batch db{static_cast<const Op*>(ops.p), static_cast<const std::uint64_t*>(keys.p),
                   with_values ? static_cast<const std::uint64_t*>(values.p) : nullptr, n};
    BatchResult dr{static_cast<OpStatus*>(status.p), static_cast<std::uint64_t*>(out.p),
                   r.stamps ? static_cast<std::uint64_t*>(stamps.p) : nullptr};
    std::uint64_t retries = 0;
    const Status ran = run(db, dr, &retries);
    if (!ran.ok()) return ran;
    DUET_CUDA_TRY(cudaMemcpy(r.status, dr.status, n * sizeof(OpStatus), cudaMemcpyDeviceToHost));
    DUET_CUDA_TRY(cudaMemcpy(r.values, dr.values, n * 8, cudaMemcpyDeviceToHost));
    if (r.stamps) DUET_CUDA_TRY(cudaMemcpy(r.stamps, dr.stamps, n * 16, cudaMemcpyDeviceToHost));
    return exhausted(retries);
  }

  Status execute_resident(const Batch& b, BatchResult& r) override {
    if (b.n == 0) return Status::Ok();
    if (!b.ops || !b.keys || !r.status || !r.values) return Status::InvalidArgument("batch array is null");
    std::uint64_t retries = 0;
    Status s = run(b, r, &retries);
    return s.ok() ? exhausted(retries) : s;
  }

  std::uint64_t nodes_used() const override { return pool_.used(); }
  std::uint64_t pool_capacity() const override { return pool_.capacity(); }

 private:
  /// The host-side argument check of execute() (arrays in host memory).
  Status check(const Batch& b, const BatchResult& r) const {
    if (b.n == 0) return Status::Ok();
    if (!b.ops || !b.keys) return Status::InvalidArgument("batch ops or keys array is null");
    if (!r.status || !r.values) return Status::InvalidArgument("batch result array is null");
    if (kIsTree && !b.values)
      for (std::uint64_t i = 0; i < b.n; ++i)
        if (b.ops[i] == Op::kInsert) return Status::InvalidArgument("batch values array is null but it holds inserts");
    return Status::Ok();
  }

  /// Whether kGroup batches run GETs first (GpuOrder; kAuto: all but the hash set on tiles).
  bool gets_first() const {
    if (config_.order != GpuOrder::kAuto) return config_.order == GpuOrder::kGetsFirst;
    return config_.group == 1 || config_.kind != GpuKind::kHashSet;
  }

  Status exhausted(std::uint64_t retries) const { return gpu_pool::exhausted(pool_.capacity(), retries); }

  /// Launches the batch's kernel on `stream` with environment E and history recorder S (the
  /// production pair PoolEnv<Node, false> and NoStamps, or the tests' PoolEnv<Node, true> and
  /// Stamps).
  template <class E, class S>
  void launch(const E& env, const S& stamps, const Batch& d, const BatchResult& dr, const std::uint32_t* order,
              std::uint64_t* c, bool lane, bool mixed, unsigned grid, unsigned lane_grid, cudaStream_t s) {
    if constexpr (kIsTree) {
      if (lane)
        tree_lane_kernel<Tree1, E, S><<<lane_grid, kBlockThreads, 0, s>>>(root_, env, d.ops, d.keys, d.values, dr.status,
                                                                          dr.values, d.n, order, c, stamps);
      else if (mixed)
        tree_mixed_kernel<Tree, Tree1, G, E, S><<<lane_grid, kBlockThreads, 0, s>>>(
            root_, env, d.ops, d.keys, d.values, dr.status, dr.values, d.n, c, stamps);
      else
        tree_kernel<Tree, G, E, S><<<grid, kBlockThreads, 0, s>>>(root_, env, d.ops, d.keys, d.values, dr.status,
                                                                  dr.values, d.n, order, c, stamps);
    } else {
      const typename Set1::View view1{reinterpret_cast<typename Set1::Node*>(view_.heads), view_.buckets};
      if (lane)
        set_lane_kernel<Set1, E, S><<<lane_grid, kBlockThreads, 0, s>>>(view1, env, d.ops, d.keys, dr.status, dr.values,
                                                                        d.n, order, c, stamps);
      else if (mixed)
        set_mixed_kernel<Set, Set1, G, E, S><<<lane_grid, kBlockThreads, 0, s>>>(view_, view1, env, d.ops, d.keys,
                                                                                 dr.status, dr.values, d.n, c, stamps);
      else
        set_kernel<Set, G, E, S><<<grid, kBlockThreads, 0, s>>>(view_, env, d.ops, d.keys, dr.status, dr.values, d.n,
                                                                order, c, stamps);
    }
  }

  /// Runs a batch whose arrays are on the device (run_once); while requests come back kRetry
  /// because the pool's fresh nodes ran out, grows the pool (no batch in flight) when fewer than
  /// half of the round's requests were applied (gpu_pool::grow_before_rerun), and runs those
  /// requests again, as a batch of their own. They changed nothing the first time, and every
  /// request of a batch is concurrent with the others, so running them later is one of the
  /// batch's orders. Stops when none is left, when the pool cannot grow (at its maximum, or GPU
  /// memory is short: *retries stay marked), or when requests give up for another reason.
  Status run(const Batch& d, BatchResult& dr, std::uint64_t* retries) {
    Status s = run_once(d, dr, retries);
    std::uint64_t ran = d.n;
    while (s.ok() && *retries > 0) {
      {
        std::unique_lock<std::shared_mutex> lk(mutex_);
        if (!pool_.fresh_exhausted()) break;
        if (gpu_pool::grow_before_rerun(ran, *retries) && !pool_.grow().ok()) break;
      }
      ran = *retries;
      s = run_retries(d, dr, retries);
    }
    return s;
  }

  /// Runs again the requests of a batch marked kRetry (*retries of them), gathered into a batch
  /// of their own, and scatters their outcomes back; *retries becomes the new count.
  Status run_retries(const Batch& d, BatchResult& dr, std::uint64_t* retries) {
    const std::uint64_t m = *retries;
    BatchStream stream;
    DUET_CUDA_TRY(cudaStreamCreateWithFlags(&stream.s, cudaStreamNonBlocking));
    gpu_pool::RetryBatch rb;
    const Status gathered = rb.gather(stream.s, d, dr.status, m);
    if (!gathered.ok()) return gathered;
    DeviceArray stamps;
    if (dr.stamps) DUET_CUDA_TRY(stamps.alloc(m * 16));
    BatchResult subr{rb.status(), rb.values(), dr.stamps ? static_cast<std::uint64_t*>(stamps.p) : nullptr};
    const Status ran = run_once(rb.batch(), subr, retries);
    if (!ran.ok()) return ran;
    const Status back = rb.scatter(dr.status, dr.values);
    if (!back.ok() || !dr.stamps) return back;
    return rb.scatter_words(subr.stamps, dr.stamps, 2);
  }

  /// Runs a batch whose arrays are on the device, on a stream of its own, then recycles the
  /// pool when no other batch is in flight.
  Status run_once(const Batch& d, BatchResult& dr, std::uint64_t* retries) {
    {
      std::shared_lock<std::shared_mutex> lk(mutex_);
      BatchStream stream;
      DUET_CUDA_TRY(cudaStreamCreateWithFlags(&stream.s, cudaStreamNonBlocking));
      DeviceArray counter;
      DUET_CUDA_TRY(counter.alloc(8));
      DUET_CUDA_TRY(cudaMemsetAsync(counter.p, 0, 8, stream.s));
      const std::uint64_t want = (d.n * G + kBlockThreads - 1) / kBlockThreads;
      const unsigned grid =
          static_cast<unsigned>(std::min<std::uint64_t>(want, std::uint64_t(std::max(1, gpu::device().sm_count)) * 8));
      auto* c = static_cast<std::uint64_t*>(counter.p);
      const bool lane = config_.group == 1, mixed = config_.mode == GpuMode::kMixed;
      // One lane per request: as many threads as requests (up to the same cap of blocks).
      const unsigned lane_grid = static_cast<unsigned>(std::min<std::uint64_t>(
          (d.n + kBlockThreads - 1) / kBlockThreads, std::uint64_t(std::max(1, gpu::device().sm_count)) * 8));
      // Tests (stamps to record, or a planted bug) run the test instantiation of the kernels;
      // every other batch runs kernels compiled without either.
      // GETs first (GpuConfig::order): the driver's kept order scratch, or one of this batch's
      // own when another batch holds it.
      const std::uint32_t* order = nullptr;
      std::unique_lock<std::mutex> order_lk(gets_first_.mutex, std::defer_lock);
      std::unique_ptr<gpu_pool::GetsFirst> own;
      if (gets_first() && !mixed && d.n > 1 && d.n < (std::uint64_t(1) << 31)) {
        gpu_pool::GetsFirst* gf = &gets_first_;
        if (!order_lk.try_lock()) gf = (own = std::make_unique<gpu_pool::GetsFirst>()).get();
        DUET_CUDA_TRY(gf->build(stream.s, d.ops, d.n, &order));
      }
      if (dr.stamps != nullptr || config_.planted != Bug::kNone)
        launch(pool_.env().with_planted(config_.planted), Stamps{ticket_, dr.stamps}, d, dr, order, c, lane, mixed,
               grid, lane_grid, stream.s);
      else
        launch(pool_.env(), NoStamps{}, d, dr, order, c, lane, mixed, grid, lane_grid, stream.s);
      DUET_CUDA_TRY(cudaGetLastError());
      DUET_CUDA_TRY(cudaMemcpyAsync(retries, c, 8, cudaMemcpyDeviceToHost, stream.s));
      DUET_CUDA_TRY(cudaStreamSynchronize(stream.s));
    }
    if constexpr (!kIsTree) {
      // No batch in flight while the lock is held exclusively: retired nodes are safe to reuse.
      std::unique_lock<std::shared_mutex> lk(mutex_);
      BatchStream stream;
      DUET_CUDA_TRY(cudaStreamCreateWithFlags(&stream.s, cudaStreamNonBlocking));
      const Status recycled = pool_.recycle(stream.s);
      if (!recycled.ok()) return recycled;
      DUET_CUDA_TRY(cudaStreamSynchronize(stream.s));
    }
    return Status::Ok();
  }

  GpuConfig config_;
  Pool<Node> pool_;
  typename Set::Node* heads_ = nullptr;
  typename Set::View view_{};
  TreeRoot* root_ = nullptr;
  std::uint64_t* ticket_ = nullptr;  ///< the in-kernel history's counter (BatchResult::stamps)
  std::shared_mutex mutex_;  ///< shared while a batch runs, exclusive to recycle the pool
  gpu_pool::GetsFirst gets_first_;  ///< the kept order scratch (GpuOrder::kGetsFirst)
};

template <unsigned K, unsigned G, Regime R>
Status make_one(const GpuConfig& c, std::unique_ptr<GpuStructure>* out) {
  if (c.kind == GpuKind::kTree) return gpu_pool::make_driver<GpuStructure, GpuImpl<K, G, R, true>>(c, out);
  return gpu_pool::make_driver<GpuStructure, GpuImpl<K, G, R, false>>(c, out);
}

template <unsigned K, unsigned G>
Status make_regime(const GpuConfig& c, std::unique_ptr<GpuStructure>* out) {
  return c.regime == Regime::kFullyAtomic ? make_one<K, G, Regime::kFullyAtomic>(c, out)
                                          : make_one<K, G, Regime::kElementwise>(c, out);
}

}  // namespace

Status make_gpu_structure(const GpuConfig& c, std::unique_ptr<GpuStructure>* out) {
  if (!out) return Status::InvalidArgument("out is null");
  // The same checks as a build without CUDA (gpu_batch_config.cpp); past them the pair is built.
  if (Status s = check_gpu_config(c); !s.ok()) return s;
  const unsigned k = c.keys_per_node, g = c.group;
  if (!gpu::device().present) return Status::Unavailable("no GPU: " + gpu::device().reason);
  // A one-lane configuration uses the node layout of K's own tile (the same words).
  if (k == 6 && (g == 8 || g == 1)) return make_regime<6, 8>(c, out);
  if (k == 14 && g == 8) return make_regime<14, 8>(c, out);
  if (k == 14) return make_regime<14, 16>(c, out);
  return make_regime<30, 32>(c, out);
}

}  // namespace duet::cods::ds
