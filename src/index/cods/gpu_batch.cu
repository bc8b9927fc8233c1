// The GPU batch driver of the CODS hash set (a list is one bucket) and B-link tree: the DUET_HD
// algorithms of hash_set.hpp and blink_tree.hpp run by cods::GpuTile<G>, one request per tile at
// a time, with nodes from a pool in GPU memory. See gpu_batch.hpp for the contract.
//
// Pool: `fresh_next` hands out never-used nodes; `free_list` holds recycled ones, which batches
// take from the top by a ticket (`free_taken`, one atomic add: free_list and free_count do not
// change while batches run, so ticket t < free_count names entry free_count - 1 - t alone); nodes
// a batch discards or retires are appended to `retired`. When no batch is in flight (the driver
// holds its mutex exclusively) the untaken entries stay, `retired` is appended after them and
// the ticket is reset, so a retired node is reused only after every batch that could have read
// it has ended. (A compare-and-swap loop on the count, the first version, let one contended CAS
// win per round: the benchmark measured GPU updates capped near 2.8 M/s by it.)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <type_traits>

#include "gpu/cuda_try.hpp"
#include "gpu/device.hpp"
#include "index/cods/blink_tree.hpp"
#include "index/cods/gpu_batch.hpp"
#include "index/cods/hash_set.hpp"

namespace duet::cods::ds {
namespace {

constexpr unsigned kBlockThreads = 256;
constexpr std::uint64_t kNone = ~std::uint64_t(0);

/// The pool's counters, in GPU memory.
struct PoolState {
  std::uint64_t fresh_next;     ///< next never-used node (may run past capacity: clamp)
  std::uint64_t capacity;       ///< nodes in the pool
  std::uint64_t free_count;     ///< recycled nodes on free_list (constant while batches run)
  std::uint64_t retired_count;  ///< nodes discarded or retired since the last recycle
  std::uint64_t free_taken;     ///< tickets drawn on free_list since the last recycle (may pass free_count)
};

/// The GPU environment of the algorithms (see cpu_env.hpp for the interface).
template <class PoolNode>
struct GpuEnv {
  PoolNode* nodes;
  std::uint64_t* free_list;
  std::uint64_t* retired;
  PoolState* st;

  // Node may be the pool's node type as another group sees it (a one-lane group's view of a
  // tile's nodes in mixed mode): the layouts must be the same.
  template <class Node, class Group>
  __device__ Node* alloc(const Group& g) {
    static_assert(sizeof(Node) == sizeof(PoolNode) && alignof(Node) == alignof(PoolNode), "one node layout per pool");
    std::uint64_t idx = kNone;
    if (g.is_leader()) {
      const std::uint64_t c = st->free_count;  // constant while batches run
      if (c > 0 && atomic_load(&st->free_taken, Order::relaxed) < c) {
        const std::uint64_t t = atomic_add(&st->free_taken, 1, Order::relaxed);
        if (t < c) idx = free_list[c - 1 - t];
      }
      if (idx == kNone) {
        const std::uint64_t f = atomic_add(&st->fresh_next, 1, Order::relaxed);
        if (f < st->capacity) idx = f;
      }
    }
    idx = g.shfl(idx, 0);
    if (idx == kNone) return nullptr;
    Node* n = reinterpret_cast<Node*>(nodes + idx);
    // Zero the node (its lock and version words included); it is unreachable until published.
    auto* w = reinterpret_cast<std::uint64_t*>(n);
    for (std::size_t i = g.lane(); i < sizeof(Node) / 8; i += Group::kSize) w[i] = 0;
    fence(Order::release);
    g.sync();
    return n;
  }
  template <class Node, class Group>
  __device__ void discard(const Group& g, Node* n) {
    retire(g, n);
  }
  template <class Node, class Group>
  __device__ void retire(const Group& g, Node* n) {
    if (g.is_leader()) {
      const std::uint64_t i = atomic_add(&st->retired_count, 1, Order::relaxed);
      if (i < st->capacity) retired[i] = static_cast<std::uint64_t>(reinterpret_cast<PoolNode*>(n) - nodes);
    }
    g.sync();
  }
  __device__ void node_read() {}
  __device__ void after_search() {}
  __device__ bool planted(Bug) const { return false; }
  __device__ bool stuck() const { return false; }
};

/// Drops the taken top of the free list and appends the retired nodes. One block; no batch may
/// be running.
__global__ void recycle_kernel(std::uint64_t* free_list, const std::uint64_t* retired, PoolState* st) {
  const std::uint64_t base = st->free_count - std::min(st->free_taken, st->free_count);
  const std::uint64_t n = std::min(st->retired_count, st->capacity);
  for (std::uint64_t i = threadIdx.x; i < n; i += blockDim.x) free_list[base + i] = retired[i];
  __syncthreads();
  if (threadIdx.x == 0) {
    st->free_count = base + n;
    st->retired_count = 0;
    st->free_taken = 0;
  }
}

template <class List>
__global__ void init_heads_kernel(typename List::Node* heads, std::uint64_t n) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::uint64_t(gridDim.x) * blockDim.x)
    List::init_head(heads + i);
}

/// Takes node 0 of the pool as the tree's first leaf and root.
template <class Tree>
__global__ void init_tree_kernel(typename Tree::Node* nodes, TreeRoot* root, PoolState* st) {
  Tree::init_leaf(nodes);
  root->node = reinterpret_cast<std::uint64_t>(nodes);
  st->fresh_next = 1;
}

/// One request per tile at a time; every lane reads the request, the leader writes the outcome.
template <class Set, unsigned G, class Env>
__global__ void set_kernel(typename Set::View view, Env env, const Op* ops, const std::uint64_t* keys,
                           OpStatus* status, std::uint64_t* out, std::uint64_t n, std::uint64_t* retries) {
  const auto g = GpuTile<G>::of_this_block();
  const std::uint64_t tiles = std::uint64_t(gridDim.x) * blockDim.x / G;
  for (std::uint64_t i = (blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x) / G; i < n; i += tiles) {
    const OpStatus s = Set::execute(g, env, view, ops[i], keys[i]);
    if (g.is_leader()) {
      status[i] = s;
      out[i] = 0;
      if (s == OpStatus::kRetry) atomic_add(retries, 1, Order::relaxed);
    }
  }
}

/// The one-lane group: one request per GPU thread.
template <class Set1, class Env>
__global__ void set_lane_kernel(typename Set1::View view, Env env, const Op* ops, const std::uint64_t* keys,
                                OpStatus* status, std::uint64_t* out, std::uint64_t n, std::uint64_t* retries) {
  const CpuThread g{};
  const std::uint64_t threads = std::uint64_t(gridDim.x) * blockDim.x;
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n; i += threads) {
    const OpStatus s = Set1::execute(g, env, view, ops[i], keys[i]);
    status[i] = s;
    out[i] = 0;
    if (s == OpStatus::kRetry) atomic_add(retries, 1, Order::relaxed);
  }
}

/// Mixed mode: each lane of a tile takes a request; the tile runs the GETs among them one after
/// another (one coalesced read per node), then every lane holding an update runs it alone. All
/// lanes of a tile make the same number of rounds, so the tile's collectives stay converged.
template <class Set, class Set1, unsigned G, class Env>
__global__ void set_mixed_kernel(typename Set::View view, typename Set1::View view1, Env env, const Op* ops,
                                 const std::uint64_t* keys, OpStatus* status, std::uint64_t* out, std::uint64_t n,
                                 std::uint64_t* retries) {
  const auto g = GpuTile<G>::of_this_block();
  const std::uint64_t tiles = std::uint64_t(gridDim.x) * blockDim.x / G;
  for (std::uint64_t base = (blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x) / G * G; base < n;
       base += tiles * G) {
    const std::uint64_t i = base + g.lane();
    const bool have = i < n;
    const Op op = have ? ops[i] : Op::kGet;
    const std::uint64_t k = have ? keys[i] : 0;
    std::uint32_t gets = g.ballot(have && op == Op::kGet);
    while (gets != 0) {
      const unsigned src = __ffs(gets) - 1;
      gets &= gets - 1;
      const OpStatus s = Set::execute(g, env, view, Op::kGet, g.shfl(k, src));
      if (g.lane() == src) {
        status[i] = s;
        out[i] = 0;
      }
    }
    if (have && op != Op::kGet) {
      const OpStatus s = Set1::execute(CpuThread{}, env, view1, op, k);
      status[i] = s;
      out[i] = 0;
      if (s == OpStatus::kRetry) atomic_add(retries, 1, Order::relaxed);
    }
    g.sync();
  }
}

template <class Tree1, class Env>
__global__ void tree_lane_kernel(TreeRoot* root, Env env, const Op* ops, const std::uint64_t* keys,
                                 const std::uint64_t* values, OpStatus* status, std::uint64_t* out, std::uint64_t n,
                                 std::uint64_t* retries) {
  const CpuThread g{};
  const std::uint64_t threads = std::uint64_t(gridDim.x) * blockDim.x;
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n; i += threads) {
    const Op op = ops[i];
    TreeResult r{OpStatus::kInvalid, 0};
    if (op != Op::kInsert || values != nullptr)
      r = Tree1::execute(g, env, root, op, keys[i], op == Op::kInsert ? values[i] : 0);
    status[i] = r.status;
    out[i] = r.status == OpStatus::kFound ? r.value : 0;
    if (r.status == OpStatus::kRetry) atomic_add(retries, 1, Order::relaxed);
  }
}

template <class Tree, class Tree1, unsigned G, class Env>
__global__ void tree_mixed_kernel(TreeRoot* root, Env env, const Op* ops, const std::uint64_t* keys,
                                  const std::uint64_t* values, OpStatus* status, std::uint64_t* out, std::uint64_t n,
                                  std::uint64_t* retries) {
  const auto g = GpuTile<G>::of_this_block();
  const std::uint64_t tiles = std::uint64_t(gridDim.x) * blockDim.x / G;
  for (std::uint64_t base = (blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x) / G * G; base < n;
       base += tiles * G) {
    const std::uint64_t i = base + g.lane();
    const bool have = i < n;
    const Op op = have ? ops[i] : Op::kGet;
    const std::uint64_t k = have ? keys[i] : 0;
    std::uint32_t gets = g.ballot(have && op == Op::kGet);
    while (gets != 0) {
      const unsigned src = __ffs(gets) - 1;
      gets &= gets - 1;
      const TreeResult r = Tree::execute(g, env, root, Op::kGet, g.shfl(k, src), 0);
      if (g.lane() == src) {
        status[i] = r.status;
        out[i] = r.status == OpStatus::kFound ? r.value : 0;
      }
    }
    if (have && op != Op::kGet) {
      TreeResult r{OpStatus::kInvalid, 0};
      if (op != Op::kInsert || values != nullptr)
        r = Tree1::execute(CpuThread{}, env, root, op, k, op == Op::kInsert ? values[i] : 0);
      status[i] = r.status;
      out[i] = r.status == OpStatus::kFound ? r.value : 0;
      if (r.status == OpStatus::kRetry) atomic_add(retries, 1, Order::relaxed);
    }
    g.sync();
  }
}

template <class Tree, unsigned G, class Env>
__global__ void tree_kernel(TreeRoot* root, Env env, const Op* ops, const std::uint64_t* keys,
                            const std::uint64_t* values, OpStatus* status, std::uint64_t* out, std::uint64_t n,
                            std::uint64_t* retries) {
  const auto g = GpuTile<G>::of_this_block();
  const std::uint64_t tiles = std::uint64_t(gridDim.x) * blockDim.x / G;
  for (std::uint64_t i = (blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x) / G; i < n; i += tiles) {
    const Op op = ops[i];
    TreeResult r{OpStatus::kInvalid, 0};
    if (op != Op::kInsert || values != nullptr)
      r = Tree::execute(g, env, root, op, keys[i], op == Op::kInsert ? values[i] : 0);
    if (g.is_leader()) {
      status[i] = r.status;
      out[i] = r.status == OpStatus::kFound ? r.value : 0;
      if (r.status == OpStatus::kRetry) atomic_add(retries, 1, Order::relaxed);
    }
  }
}

/// Device memory freed when it goes out of scope.
struct DeviceArray {
  void* p = nullptr;
  ~DeviceArray() { cudaFree(p); }
  cudaError_t alloc(std::size_t bytes) { return cudaMalloc(&p, bytes ? bytes : 8); }
};

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
  using Env = GpuEnv<Node>;
  static_assert(sizeof(Node1) == sizeof(Node) && alignof(Node1) == alignof(Node),
                "the one-lane group must see the tile's node layout");

 public:
  explicit GpuImpl(const GpuConfig& c) : config_(c) {}
  ~GpuImpl() override {
    cudaFree(heads_);
    cudaFree(env_.nodes);
    cudaFree(env_.free_list);
    cudaFree(env_.retired);
    cudaFree(env_.st);
    cudaFree(root_);
  }

  Status init() {
    const std::uint64_t cap = config_.pool_nodes;
    DUET_CUDA_TRY(cudaMalloc(&env_.nodes, sizeof(Node) * cap));
    DUET_CUDA_TRY(cudaMalloc(&env_.free_list, 8 * cap));
    DUET_CUDA_TRY(cudaMalloc(&env_.retired, 8 * cap));
    DUET_CUDA_TRY(cudaMalloc(&env_.st, sizeof(PoolState)));
    const PoolState st{0, cap, 0, 0, 0};
    DUET_CUDA_TRY(cudaMemcpy(env_.st, &st, sizeof(st), cudaMemcpyHostToDevice));
    const int grid = std::max(1, gpu::device().sm_count) * 4;
    if constexpr (kIsTree) {
      DUET_CUDA_TRY(cudaMalloc(&root_, sizeof(TreeRoot)));
      init_tree_kernel<Tree><<<1, 1>>>(env_.nodes, root_, env_.st);
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
    DeviceArray ops, keys, values, status, out;
    DUET_CUDA_TRY(ops.alloc(n * sizeof(Op)));
    DUET_CUDA_TRY(keys.alloc(n * 8));
    if (with_values) DUET_CUDA_TRY(values.alloc(n * 8));
    DUET_CUDA_TRY(status.alloc(n * sizeof(OpStatus)));
    DUET_CUDA_TRY(out.alloc(n * 8));
    DUET_CUDA_TRY(cudaMemcpy(ops.p, b.ops, n * sizeof(Op), cudaMemcpyHostToDevice));
    DUET_CUDA_TRY(cudaMemcpy(keys.p, b.keys, n * 8, cudaMemcpyHostToDevice));
    if (with_values) DUET_CUDA_TRY(cudaMemcpy(values.p, b.values, n * 8, cudaMemcpyHostToDevice));
    const Batch db{static_cast<const Op*>(ops.p), static_cast<const std::uint64_t*>(keys.p),
                   with_values ? static_cast<const std::uint64_t*>(values.p) : nullptr, n};
    BatchResult dr{static_cast<OpStatus*>(status.p), static_cast<std::uint64_t*>(out.p)};
    std::uint64_t retries = 0;
    const Status ran = run(db, dr, &retries);
    if (!ran.ok()) return ran;
    DUET_CUDA_TRY(cudaMemcpy(r.status, dr.status, n * sizeof(OpStatus), cudaMemcpyDeviceToHost));
    DUET_CUDA_TRY(cudaMemcpy(r.values, dr.values, n * 8, cudaMemcpyDeviceToHost));
    return exhausted(retries);
  }

  Status execute_resident(const Batch& b, BatchResult& r) override {
    if (b.n == 0) return Status::Ok();
    if (!b.ops || !b.keys || !r.status || !r.values) return Status::InvalidArgument("batch array is null");
    std::uint64_t retries = 0;
    Status s = run(b, r, &retries);
    return s.ok() ? exhausted(retries) : s;
  }

  std::uint64_t nodes_used() const override {
    PoolState st{};
    if (cudaMemcpy(&st, env_.st, sizeof(st), cudaMemcpyDeviceToHost) != cudaSuccess) return 0;
    return std::min(st.fresh_next, st.capacity);
  }

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

  Status exhausted(std::uint64_t retries) const {
    if (retries == 0) return Status::Ok();
    return Status::ResourceExhausted("node pool of " + std::to_string(config_.pool_nodes) + " nodes is exhausted; " +
                                     std::to_string(retries) + " requests marked retry were not applied");
  }

  /// Runs a batch whose arrays are on the device, on a stream of its own, then recycles the
  /// pool when no other batch is in flight.
  Status run(const Batch& d, BatchResult& dr, std::uint64_t* retries) {
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
      if constexpr (kIsTree) {
        if (lane)
          tree_lane_kernel<Tree1, Env><<<lane_grid, kBlockThreads, 0, stream.s>>>(root_, env_, d.ops, d.keys, d.values,
                                                                                  dr.status, dr.values, d.n, c);
        else if (mixed)
          tree_mixed_kernel<Tree, Tree1, G, Env><<<lane_grid, kBlockThreads, 0, stream.s>>>(
              root_, env_, d.ops, d.keys, d.values, dr.status, dr.values, d.n, c);
        else
          tree_kernel<Tree, G, Env><<<grid, kBlockThreads, 0, stream.s>>>(root_, env_, d.ops, d.keys, d.values,
                                                                           dr.status, dr.values, d.n, c);
      } else {
        const typename Set1::View view1{reinterpret_cast<typename Set1::Node*>(view_.heads), view_.buckets};
        if (lane)
          set_lane_kernel<Set1, Env><<<lane_grid, kBlockThreads, 0, stream.s>>>(view1, env_, d.ops, d.keys, dr.status,
                                                                                dr.values, d.n, c);
        else if (mixed)
          set_mixed_kernel<Set, Set1, G, Env><<<lane_grid, kBlockThreads, 0, stream.s>>>(
              view_, view1, env_, d.ops, d.keys, dr.status, dr.values, d.n, c);
        else
          set_kernel<Set, G, Env><<<grid, kBlockThreads, 0, stream.s>>>(view_, env_, d.ops, d.keys, dr.status,
                                                                         dr.values, d.n, c);
      }
      DUET_CUDA_TRY(cudaGetLastError());
      DUET_CUDA_TRY(cudaMemcpyAsync(retries, c, 8, cudaMemcpyDeviceToHost, stream.s));
      DUET_CUDA_TRY(cudaStreamSynchronize(stream.s));
    }
    if constexpr (!kIsTree) {
      // No batch in flight while the lock is held exclusively: retired nodes are safe to reuse.
      std::unique_lock<std::shared_mutex> lk(mutex_);
      BatchStream stream;
      DUET_CUDA_TRY(cudaStreamCreateWithFlags(&stream.s, cudaStreamNonBlocking));
      recycle_kernel<<<1, 1024, 0, stream.s>>>(env_.free_list, env_.retired, env_.st);
      DUET_CUDA_TRY(cudaGetLastError());
      DUET_CUDA_TRY(cudaStreamSynchronize(stream.s));
    }
    return Status::Ok();
  }

  GpuConfig config_;
  Env env_{};
  typename Set::Node* heads_ = nullptr;
  typename Set::View view_{};
  TreeRoot* root_ = nullptr;
  std::shared_mutex mutex_;  ///< shared while a batch runs, exclusive to recycle the pool
};

template <unsigned K, unsigned G, Regime R>
Status make_one(const GpuConfig& c, std::unique_ptr<GpuStructure>* out) {
  if (c.kind == GpuKind::kTree) {
    auto t = std::make_unique<GpuImpl<K, G, R, true>>(c);
    const Status s = t->init();
    if (s.ok()) *out = std::move(t);
    return s;
  }
  auto t = std::make_unique<GpuImpl<K, G, R, false>>(c);
  const Status s = t->init();
  if (s.ok()) *out = std::move(t);
  return s;
}

template <unsigned K, unsigned G>
Status make_regime(const GpuConfig& c, std::unique_ptr<GpuStructure>* out) {
  return c.regime == Regime::kFullyAtomic ? make_one<K, G, Regime::kFullyAtomic>(c, out)
                                          : make_one<K, G, Regime::kElementwise>(c, out);
}

}  // namespace

Status make_gpu_structure(const GpuConfig& c, std::unique_ptr<GpuStructure>* out) {
  if (!out) return Status::InvalidArgument("out is null");
  if (c.kind != GpuKind::kList && c.kind != GpuKind::kHashSet && c.kind != GpuKind::kTree)
    return Status::InvalidArgument("unknown structure kind");
  if (c.regime != Regime::kElementwise && c.regime != Regime::kFullyAtomic)
    return Status::InvalidArgument("unknown regime");
  if (c.kind == GpuKind::kHashSet && (c.buckets == 0 || c.buckets > (std::uint64_t(1) << 32)))
    return Status::InvalidArgument("bucket count " + std::to_string(c.buckets) + " is outside [1, 2^32]");
  if (c.pool_nodes == 0 || c.pool_nodes > (std::uint64_t(1) << 32))
    return Status::InvalidArgument("pool_nodes " + std::to_string(c.pool_nodes) + " is outside [1, 2^32]");
  if (c.mode != GpuMode::kGroup && c.mode != GpuMode::kMixed) return Status::InvalidArgument("unknown mode");
  const unsigned k = c.keys_per_node, g = c.group;
  const bool lane = g == 1 && (k == 6 || k == 14 || k == 30);
  const bool built = (k == 6 && g == 8) || (k == 14 && (g == 8 || g == 16)) || (k == 30 && g == 32) || lane;
  if (!built)
    return Status::InvalidArgument("keys_per_node " + std::to_string(k) + " with group " + std::to_string(g) +
                                   " is not built; supported: (6, 8), (14, 8), (14, 16), (30, 32), (6 | 14 | 30, 1)");
  if (lane && c.mode == GpuMode::kMixed)
    return Status::InvalidArgument("mixed mode runs GETs on tiles: group must be 8, 16 or 32, not 1");
  if (!gpu::device().present) return Status::Unavailable("no GPU: " + gpu::device().reason);
  // A one-lane configuration uses the node layout of K's own tile (the same words).
  if (k == 6 && (g == 8 || g == 1)) return make_regime<6, 8>(c, out);
  if (k == 14 && g == 8) return make_regime<14, 8>(c, out);
  if (k == 14) return make_regime<14, 16>(c, out);
  return make_regime<30, 32>(c, out);
}

}  // namespace duet::cods::ds
