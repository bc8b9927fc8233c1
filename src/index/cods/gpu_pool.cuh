// The node pool of the CODS GPU drivers (gpu_batch.cu, gpu_versioned.cu): nodes in GPU memory,
// handed out to the algorithms through the environment interface of cpu_env.hpp, and reused
// only once no batch can read them. CUDA only (included by .cu files).
//
// The nodes lie in chunks: the first of `pool_nodes`, and each grow() (between batches) adds one
// as large as the pool so far, so a node never moves. Fresh node f is in the chunk whose range
// of fresh numbers holds it (a scan of at most kMaxChunks bounds, constant while batches run);
// the free and retired lists hold node addresses, so a node's chunk is never looked up again.
//
// `fresh_next` hands out never-used nodes; `free_list` holds recycled ones, which batches take
// from the top by a ticket (`free_taken`, one atomic add: free_list and free_count do not change
// while batches run, so ticket t < free_count names entry free_count - 1 - t alone); nodes a
// batch discards or retires are appended to `retired`. When no batch is in flight (the driver's
// duty: it must not launch recycle_kernel beside a batch) the untaken entries stay, `retired` is
// appended after them and the ticket is reset, so a retired node is reused only after every
// batch that could have read it has ended. (A compare-and-swap loop on the count, the first
// version, let one contended CAS win per round: the benchmark measured GPU updates capped near
// 2.8 M/s by it.) A request that finds no node gets null and reports kRetry having changed
// nothing (the algorithms allocate before they write).
//
// Test instrumentation is compile-time: the negative controls (PoolEnv<_, true>) and in-kernel
// histories (Stamps) exist only in the kernels a test instantiates; production kernels take
// PoolEnv<_, false> and NoStamps, which compile to nothing.
#pragma once

#include <cuda_runtime.h>
#include <thrust/iterator/counting_iterator.h>

#include <cub/device/device_partition.cuh>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "gpu/cuda_try.hpp"
#include "gpu/host_copy.hpp"
#include "gpu/device.hpp"
#include "index/cods/common.hpp"

namespace duet::cods::ds::gpu_pool {
// Internal linkage: each driver's translation unit has its own kernels (no relocatable device
// code), and no two of them share an instantiation.
namespace {

constexpr std::uint64_t kNone = ~std::uint64_t(0);
/// Chunks a pool may have: the first, then one per doubling (2^32 nodes from one node).
constexpr unsigned kMaxChunks = 34;

/// The pool's counters and chunks, in GPU memory.
struct PoolState {
  std::uint64_t fresh_next;     ///< next never-used node (may run past capacity: clamp)
  std::uint64_t capacity;       ///< nodes in the pool (all chunks)
  std::uint64_t free_count;     ///< recycled nodes on free_list (constant while batches run)
  std::uint64_t retired_count;  ///< nodes discarded or retired since the last recycle
  std::uint64_t free_taken;     ///< tickets drawn on free_list since the last recycle (may pass free_count)
  std::uint64_t recycled;       ///< nodes recycled so far (statistics)
  std::uint64_t chunks;         ///< chunks in use
  /// Chunk c holds fresh nodes [chunk_end[c - 1], chunk_end[c]) (from 0 for c = 0) at address
  /// chunk_base[c]; constant while batches run.
  std::uint64_t chunk_end[kMaxChunks];
  std::uint64_t chunk_base[kMaxChunks];
};

/// The test-only state of an environment (kTest): the planted bug and a thread's give-up count.
/// Production environments (kTest false) hold none of it.
template <bool kTest>
struct PlantedState {};
template <>
struct PlantedState<true> {
  Bug bug = Bug::kNone;
  std::uint32_t steps = 0;  ///< stuck() checks of this thread (its copy of the kernel argument)
};

/// The GPU environment of the algorithms over a pool of PoolNode slots. A node type of another
/// group's view (a one-lane group reading a tile's nodes) or a smaller node (the versioned tree's
/// index nodes in data-leaf slots) fits a slot when its size and alignment allow.
///
/// kTest (tests only) compiles in the negative controls: `bug` names a planted bug and stuck()
/// counts a thread's steps. With kTest false (production) planted() and stuck() are constant
/// false, the environment holds nothing but the pool's pointers, and nothing in a kernel writes
/// to it, so the algorithms compile as if the controls did not exist.
template <class PoolNode, bool kTest = false>
struct PoolEnv : PlantedState<kTest> {
  PoolNode* nodes = nullptr;           ///< the first chunk (node 0 is its first slot)
  std::uint64_t* free_list = nullptr;  ///< node addresses
  std::uint64_t* retired = nullptr;    ///< node addresses
  PoolState* st = nullptr;

  /// A zeroed slot (lock and version words included), or null when the pool is empty.
  template <class Node, class Group>
  __device__ Node* alloc(const Group& g) {
    static_assert(sizeof(Node) <= sizeof(PoolNode) && alignof(PoolNode) % alignof(Node) == 0, "a node fits a slot");
    std::uint64_t at = 0;  // the node's address
    if (g.is_leader()) {
      const std::uint64_t c = st->free_count;  // constant while batches run
      if (c > 0 && atomic_load(&st->free_taken, Order::relaxed) < c) {
        const std::uint64_t t = atomic_add(&st->free_taken, 1, Order::relaxed);
        if (t < c) at = free_list[c - 1 - t];
      }
      if (at == 0) {
        const std::uint64_t f = atomic_add(&st->fresh_next, 1, Order::relaxed);
        if (f < st->capacity) at = fresh_address(f);
      }
    }
    at = g.shfl(at, 0);
    if (at == 0) return nullptr;
    // Unreachable until published: plain zeroing, then a release fence.
    auto* w = reinterpret_cast<std::uint64_t*>(at);
    for (std::size_t i = g.lane(); i < sizeof(PoolNode) / 8; i += Group::kSize) w[i] = 0;
    fence(Order::release);
    g.sync();
    return reinterpret_cast<Node*>(at);
  }
  /// A node never published: reused after the batch, like a retired one.
  template <class Node, class Group>
  __device__ void discard(const Group& g, Node* n) {
    retire(g, n);
  }
  /// A node unlinked by this batch: reused once every batch that could read it has ended.
  template <class Node, class Group>
  __device__ void retire(const Group& g, Node* n) {
    if (g.is_leader()) {
      const std::uint64_t i = atomic_add(&st->retired_count, 1, Order::relaxed);
      if (i < st->capacity) retired[i] = reinterpret_cast<std::uint64_t>(n);
    }
    g.sync();
  }
  /// The address of fresh node f (f < capacity).
  __device__ std::uint64_t fresh_address(std::uint64_t f) const {
    std::uint64_t c = 0, begin = 0;
    while (c + 1 < st->chunks && f >= st->chunk_end[c]) begin = st->chunk_end[c++];
    return st->chunk_base[c] + (f - begin) * sizeof(PoolNode);
  }
  __device__ void node_read() {}
  __device__ void after_search() {}
  /// Whether bug b is planted (kTest only; constant false in production).
  __device__ bool planted(Bug b) const {
    if constexpr (kTest) return this->bug != Bug::kNone && this->bug == b;
    else return false;
  }
  /// Tests only: a planted bug can keep a removed node reachable and loop a search; each GPU
  /// thread's copy of the environment then gives up (kRetry, nothing changed) after kStuckSteps
  /// checks in all. Every lane of a tile makes the same checks, so they agree; in mixed mode
  /// lanes run updates alone and would not (planted bugs are not for mixed mode). Constant false
  /// in production.
  __device__ bool stuck() {
    if constexpr (kTest) {
      if (this->bug == Bug::kNone) return false;
      return ++this->steps > kStuckSteps;
    } else {
      return false;
    }
  }
  static constexpr std::uint32_t kStuckSteps = 1u << 20;

  /// The same pool seen by a test environment (kTest) with bug b planted (Bug::kNone for none).
  PoolEnv<PoolNode, true> with_planted(Bug b) const {
    PoolEnv<PoolNode, true> e;
    e.nodes = nodes;
    e.free_list = free_list;
    e.retired = retired;
    e.st = st;
    e.bug = b;
    return e;
  }
};

/// In-kernel history (tests; common.hpp, BatchResult::stamps): each request draws a ticket of
/// the structure's counter before it starts and after it ends. The adds are acq_rel and fenced
/// on every lane of the group, so a request invoked after another's response ticket sees that
/// request's effects. With out null (not recording) it does nothing. Kernels of the test
/// instantiation take it; production kernels take NoStamps.
struct Stamps {
  std::uint64_t* ticket = nullptr;
  std::uint64_t* out = nullptr;

  template <class Group>
  __device__ void invoke(const Group& g, std::uint64_t i) const {
    if (!out) return;
    if (g.is_leader()) out[2 * i] = atomic_add(ticket, 1, Order::acq_rel);
    g.sync();
    fence(Order::seq_cst);
  }
  template <class Group>
  __device__ void respond(const Group& g, std::uint64_t i) const {
    if (!out) return;
    fence(Order::seq_cst);
    g.sync();
    if (g.is_leader()) out[2 * i + 1] = atomic_add(ticket, 1, Order::acq_rel);
  }
};

/// No history (production kernels): an empty argument whose calls compile to nothing.
struct NoStamps {
  template <class Group>
  __device__ void invoke(const Group&, std::uint64_t) const {}
  template <class Group>
  __device__ void respond(const Group&, std::uint64_t) const {}
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
    st->recycled += n;
  }
}

/// The pool's device memory, owned: allocated by init(), freed on destruction. env() is the
/// environment the kernels take by value.
template <class PoolNode>
class Pool {
 public:
  Pool() = default;
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  ~Pool() {
    for (std::uint64_t c = 0; c < host_.chunks; ++c) cudaFree(reinterpret_cast<void*>(host_.chunk_base[c]));
    cudaFree(env_.free_list);
    cudaFree(env_.retired);
    cudaFree(env_.st);
  }

  /// Allocates `capacity` nodes (uninitialised) and the lists; `fresh_next` starts at `taken`
  /// (nodes the caller initialises itself, such as a tree's first leaf). grow() may take the pool
  /// to `max_capacity` nodes (at least capacity).
  Status init(std::uint64_t capacity, std::uint64_t taken = 0, std::uint64_t max_capacity = 0) {
    max_capacity_ = std::max(capacity, max_capacity);
    DUET_CUDA_TRY(cudaMalloc(&env_.nodes, sizeof(PoolNode) * capacity));
    host_ = PoolState{};
    host_.fresh_next = taken;
    host_.capacity = capacity;
    host_.chunks = 1;
    host_.chunk_end[0] = capacity;
    host_.chunk_base[0] = reinterpret_cast<std::uint64_t>(env_.nodes);
    DUET_CUDA_TRY(cudaMalloc(&env_.free_list, 8 * capacity));
    DUET_CUDA_TRY(cudaMalloc(&env_.retired, 8 * capacity));
    DUET_CUDA_TRY(cudaMalloc(&env_.st, sizeof(PoolState)));
    DUET_CUDA_TRY(::duet::gpu::copy_to_device(env_.st, &host_, sizeof(host_)));
    capacity_.store(capacity, std::memory_order_relaxed);
    return Status::Ok();
  }
  /// Whether every fresh node has been handed out (so a request's kRetry may be for want of a
  /// node, not a planted give-up).
  bool fresh_exhausted() const {
    const PoolState st = state();
    return st.capacity != 0 && st.fresh_next >= st.capacity;
  }
  /// Nodes in the pool now (any thread, any time).
  std::uint64_t capacity() const { return capacity_.load(std::memory_order_relaxed); }
  /// Adds a chunk as large as the pool so far (less at the maximum): the nodes in use stay where
  /// they are, and the next fresh node is the new chunk's first; the free and retired lists move
  /// to arrays of the new capacity. No batch may be in
  /// flight. ResourceExhausted at the maximum or when GPU memory is short (the pool is then as
  /// it was); costs one allocation, a copy of the lists and a synchronisation.
  Status grow() {
    PoolState st = state();
    if (st.capacity == 0) return Status::Internal("the node pool's state could not be read");
    const std::uint64_t add = std::min(st.capacity, max_capacity_ - std::min(max_capacity_, st.capacity));
    if (add == 0 || st.chunks >= kMaxChunks)
      return Status::ResourceExhausted("node pool is at its maximum of " + std::to_string(st.capacity) + " nodes");
    const std::uint64_t cap = st.capacity + add;
    void *chunk = nullptr, *free_list = nullptr, *retired = nullptr;
    if (cudaMalloc(&chunk, sizeof(PoolNode) * add) != cudaSuccess || cudaMalloc(&free_list, 8 * cap) != cudaSuccess ||
        cudaMalloc(&retired, 8 * cap) != cudaSuccess) {
      cudaGetLastError();  // clear the allocation error
      cudaFree(chunk), cudaFree(free_list), cudaFree(retired);
      return Status::ResourceExhausted("GPU memory is short: the node pool of " + std::to_string(st.capacity) +
                                       " nodes could not grow by " + std::to_string(add));
    }
    DUET_CUDA_TRY(cudaMemcpy(free_list, env_.free_list, 8 * st.free_count, cudaMemcpyDeviceToDevice));
    DUET_CUDA_TRY(cudaMemcpy(retired, env_.retired, 8 * std::min(st.retired_count, st.capacity),
                             cudaMemcpyDeviceToDevice));
    // Failed allocations advanced fresh_next past the capacity without taking a node: the new
    // chunk's nodes start at the old capacity, or a pool grown after a round that ran dry would
    // skip its new nodes until fresh_next came back within the capacity.
    st.fresh_next = std::min(st.fresh_next, st.capacity);
    st.chunk_end[st.chunks] = cap;
    st.chunk_base[st.chunks] = reinterpret_cast<std::uint64_t>(chunk);
    ++st.chunks;
    st.capacity = cap;
    DUET_CUDA_TRY(::duet::gpu::copy_to_device(env_.st, &st, sizeof(st)));
    cudaFree(env_.free_list);
    cudaFree(env_.retired);
    env_.free_list = static_cast<std::uint64_t*>(free_list);
    env_.retired = static_cast<std::uint64_t*>(retired);
    host_ = st;
    capacity_.store(cap, std::memory_order_relaxed);
    return Status::Ok();
  }
  /// Moves retired nodes to the free list on `stream`. No batch may be in flight.
  Status recycle(cudaStream_t stream) {
    recycle_kernel<<<1, 1024, 0, stream>>>(env_.free_list, env_.retired, env_.st);
    DUET_CUDA_TRY(cudaGetLastError());
    return Status::Ok();
  }
  /// The counters (zero on a CUDA error).
  PoolState state() const {
    PoolState st{};
    if (cudaMemcpy(&st, env_.st, sizeof(st), cudaMemcpyDeviceToHost) != cudaSuccess) return PoolState{};
    return st;
  }
  /// Nodes taken from fresh memory so far.
  std::uint64_t used() const {
    const PoolState st = state();
    return std::min(st.fresh_next, st.capacity);
  }
  PoolEnv<PoolNode>& env() { return env_; }
  const PoolEnv<PoolNode>& env() const { return env_; }

 private:
  PoolEnv<PoolNode> env_{};
  PoolState host_{};  ///< the chunks as last set by the host (counters not kept up to date)
  std::uint64_t max_capacity_ = 0;
  std::atomic<std::uint64_t> capacity_{0};
};

/// Whether a driver whose round of `ran` requests left `retries` of them marked kRetry, with the
/// pool's fresh nodes spent, grows the pool before running those again: only when fewer than
/// half of the round's requests were applied. Otherwise the nodes the round's failed requests
/// discarded, recycled after it, carry the next round. So a batch with more requests than the
/// pool holds runs in rounds, and the pool grows to about what the batch keeps, not to what all
/// its requests' spares take at once (with growth after every round, one batch of 3,000
/// inserts took a 16-node pool to 32,768 nodes where 3,500 sufficed).
inline bool grow_before_rerun(std::uint64_t ran, std::uint64_t retries) { return retries * 2 > ran; }

/// The status of a batch that left `retries` requests marked kRetry in a pool of `pool_nodes`.
Status exhausted(std::uint64_t pool_nodes, std::uint64_t retries) {
  if (retries == 0) return Status::Ok();
  return Status::ResourceExhausted("node pool of " + std::to_string(pool_nodes) + " nodes is exhausted; " +
                                   std::to_string(retries) + " requests marked retry were not applied");
}

/// Puts the indexes of the requests marked kRetry in idx[0, *count) (in no particular order).
__global__ void find_retries_kernel(const OpStatus* status, std::uint64_t n, std::uint64_t* idx, std::uint64_t* count) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::uint64_t(gridDim.x) * blockDim.x)
    if (status[i] == OpStatus::kRetry) idx[atomic_add(count, 1, Order::relaxed)] = i;
}
/// dst[j] = src[idx[j] * w + k] for k < w (gather: w items per request).
template <class T>
__global__ void gather_kernel(const T* src, const std::uint64_t* idx, T* dst, std::uint64_t m, unsigned w) {
  for (std::uint64_t j = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; j < m;
       j += std::uint64_t(gridDim.x) * blockDim.x)
    for (unsigned k = 0; k < w; ++k) dst[j * w + k] = src[idx[j] * w + k];
}
/// dst[idx[j] * w + k] = src[j * w + k] for k < w (the scatter back).
template <class T>
__global__ void scatter_kernel(const T* src, const std::uint64_t* idx, T* dst, std::uint64_t m, unsigned w) {
  for (std::uint64_t j = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; j < m;
       j += std::uint64_t(gridDim.x) * blockDim.x)
    for (unsigned k = 0; k < w; ++k) dst[idx[j] * w + k] = src[j * w + k];
}

/// Device memory freed when it goes out of scope.
struct DeviceArray {
  void* p = nullptr;
  DeviceArray() = default;
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { cudaFree(p); }
  cudaError_t alloc(std::size_t bytes) { return cudaMalloc(&p, bytes ? bytes : 8); }
};

/// The requests of a batch that came back kRetry, gathered into arrays of their own so the
/// driver can run them again as a batch once its pool grew, and the scatter of their outcomes
/// back into the batch's arrays. Every call works on `stream` and synchronises it. Costs a pass
/// over the batch's status array, then one per array gathered or scattered (m entries each).
class RetryBatch {
 public:
  /// Gathers the m requests of d (arrays in GPU memory) whose status is kRetry: their ops, keys
  /// and, when d has them, values.
  Status gather(cudaStream_t stream, const Batch& d, const OpStatus* status, std::uint64_t m) {
    m_ = m;
    stream_ = stream;
    DUET_CUDA_TRY(idx_.alloc(m * 8));
    DUET_CUDA_TRY(count_.alloc(8));
    DUET_CUDA_TRY(ops_.alloc(m * sizeof(Op)));
    DUET_CUDA_TRY(keys_.alloc(m * 8));
    if (d.values) DUET_CUDA_TRY(values_.alloc(m * 8));
    DUET_CUDA_TRY(status_.alloc(m * sizeof(OpStatus)));
    DUET_CUDA_TRY(out_.alloc(m * 8));
    DUET_CUDA_TRY(cudaMemsetAsync(count_.p, 0, 8, stream));
    find_retries_kernel<<<grid(), kThreads, 0, stream>>>(status, d.n, idx(), static_cast<std::uint64_t*>(count_.p));
    gather_kernel<<<grid(), kThreads, 0, stream>>>(d.ops, idx(), static_cast<Op*>(ops_.p), m, 1);
    gather_kernel<<<grid(), kThreads, 0, stream>>>(d.keys, idx(), static_cast<std::uint64_t*>(keys_.p), m, 1);
    if (d.values)
      gather_kernel<<<grid(), kThreads, 0, stream>>>(d.values, idx(), static_cast<std::uint64_t*>(values_.p), m, 1);
    DUET_CUDA_TRY(cudaGetLastError());
    DUET_CUDA_TRY(cudaStreamSynchronize(stream));
    batch_ = Batch{static_cast<const Op*>(ops_.p), static_cast<const std::uint64_t*>(keys_.p),
                   d.values ? static_cast<const std::uint64_t*>(values_.p) : nullptr, m};
    return Status::Ok();
  }
  /// The gathered requests, as a batch; and the arrays its run writes its outcomes to.
  const Batch& batch() const { return batch_; }
  OpStatus* status() { return static_cast<OpStatus*>(status_.p); }
  std::uint64_t* values() { return static_cast<std::uint64_t*>(out_.p); }
  /// Writes the sub-batch's status and values back into the batch's arrays.
  Status scatter(OpStatus* status, std::uint64_t* values) {
    scatter_kernel<<<grid(), kThreads, 0, stream_>>>(this->status(), idx(), status, m_, 1);
    scatter_kernel<<<grid(), kThreads, 0, stream_>>>(this->values(), idx(), values, m_, 1);
    DUET_CUDA_TRY(cudaGetLastError());
    DUET_CUDA_TRY(cudaStreamSynchronize(stream_));
    return Status::Ok();
  }
  /// Writes w words per request of another per-request array (src: the sub-batch's) back.
  Status scatter_words(const std::uint64_t* src, std::uint64_t* dst, unsigned w) {
    scatter_kernel<<<grid(), kThreads, 0, stream_>>>(src, idx(), dst, m_, w);
    DUET_CUDA_TRY(cudaGetLastError());
    DUET_CUDA_TRY(cudaStreamSynchronize(stream_));
    return Status::Ok();
  }

 private:
  static constexpr unsigned kThreads = 256;
  static unsigned grid() { return static_cast<unsigned>(std::max(1, gpu::device().sm_count)) * 4; }
  std::uint64_t* idx() { return static_cast<std::uint64_t*>(idx_.p); }
  DeviceArray idx_, count_, ops_, keys_, values_, status_, out_;
  Batch batch_{};
  std::uint64_t m_ = 0;
  cudaStream_t stream_ = nullptr;
};

/// Counts the kGet ops of ops[0, n) into *gets (a warp sum, then one atomic add per warp).
__global__ void count_gets_kernel(const Op* ops, std::uint64_t n, unsigned long long* gets) {
  const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
  unsigned here = 0;
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n; i += stride)
    here += ops[i] == Op::kGet;
  const unsigned warp = __reduce_add_sync(0xffffffffu, here);  // every lane reaches it: no early exit
  if ((threadIdx.x & 31) == 0 && warp != 0) atomicAdd(gets, static_cast<unsigned long long>(warp));
}

/// The order of a batch whose GETs go first (GpuOrder::kGetsFirst): the indices of every kGet,
/// then those of every other op. build() first counts the GETs (one pass over the ops, then a
/// synchronisation of the caller's stream to read the count); a batch of GETs only or updates
/// only needs no order and costs nothing more. Otherwise cub::DevicePartition writes the order
/// (a second pass) into scratch kept and grown between batches; one batch uses it at a time
/// (the driver holds `mutex` for the batch's length, and a batch that finds it taken builds its
/// own).
class GetsFirst {
 public:
  struct IsGet {
    const Op* ops;
    __device__ bool operator()(std::uint32_t i) const { return ops[i] == Op::kGet; }
  };
  /// Orders ops[0, n) (n < 2^31) on `stream`. *order is the order, or null when the batch holds
  /// only GETs or only updates (index order is then the same order).
  cudaError_t build(cudaStream_t stream, const Op* ops, std::uint64_t n, const std::uint32_t** order) {
    *order = nullptr;
    cudaError_t e = cudaSuccess;
    if (!count_ && (e = cudaMalloc(&count_, 8)) != cudaSuccess) return e;
    if ((e = cudaMemsetAsync(count_, 0, 8, stream)) != cudaSuccess) return e;
    const unsigned blocks = static_cast<unsigned>(
        std::min<std::uint64_t>((n + 255) / 256, std::uint64_t(std::max(1, gpu::device().sm_count)) * 8));
    count_gets_kernel<<<blocks, 256, 0, stream>>>(ops, n, count_);
    unsigned long long gets = 0;
    if ((e = cudaMemcpyAsync(&gets, count_, 8, cudaMemcpyDeviceToHost, stream)) != cudaSuccess) return e;
    if ((e = cudaStreamSynchronize(stream)) != cudaSuccess) return e;
    if (gets == 0 || gets == n) return cudaSuccess;
    const thrust::counting_iterator<std::uint32_t> in(0);
    std::size_t temp = 0;
    e = cub::DevicePartition::If(nullptr, temp, in, static_cast<std::uint32_t*>(nullptr),
                                 static_cast<std::uint32_t*>(nullptr), static_cast<int>(n), IsGet{ops}, stream);
    if (e != cudaSuccess) return e;
    const std::size_t scratch = (temp + 255) & ~std::size_t(255);
    const std::size_t need = scratch + n * 4 + 8;  // CUB's scratch, the order, its count
    if (need > bytes_) {
      cudaFree(p_);
      p_ = nullptr;
      bytes_ = 0;
      if ((e = cudaMalloc(&p_, need)) != cudaSuccess) return e;
      bytes_ = need;
    }
    auto* out = reinterpret_cast<std::uint32_t*>(static_cast<char*>(p_) + scratch);
    if ((e = cub::DevicePartition::If(p_, temp, in, out, out + n, static_cast<int>(n), IsGet{ops}, stream)) !=
        cudaSuccess)
      return e;
    *order = out;
    return cudaSuccess;
  }
  GetsFirst() = default;
  GetsFirst(const GetsFirst&) = delete;
  GetsFirst& operator=(const GetsFirst&) = delete;
  ~GetsFirst() {
    cudaFree(p_);
    cudaFree(count_);
  }
  std::mutex mutex;

 private:
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
  unsigned long long* count_ = nullptr;
};

/// Initialises a driver and hands it to *out when that succeeded (make_gpu_* functions).
template <class Base, class Impl, class Config>
Status make_driver(const Config& c, std::unique_ptr<Base>* out) {
  auto t = std::make_unique<Impl>(c);
  const Status s = t->init();
  if (s.ok()) *out = std::move(t);
  return s;
}

}  // namespace
}  // namespace duet::cods::ds::gpu_pool
