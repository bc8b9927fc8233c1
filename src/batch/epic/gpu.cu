// Epic on the GPU (gpu.hpp): planning with CUB and Thrust, warp-per-txn execution, the deleted-bit
// scan, and GPU indexing on L-Slab (insert-first, a device-resident FIFO free ring, back-links).
// The planner mirrors plan_cpu step for step, and the indexer Database::index, so their plans and
// ids are equal bit for bit.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#include <cub/device/device_radix_sort.cuh>
#include <cuda/atomic>
#include <thrust/copy.h>
#include <thrust/device_ptr.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/execution_policy.h>
#include <thrust/iterator/reverse_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/scan.h>

#include "batch/epic/gpu.hpp"
#include "batch/epic/pool.hpp"
#include "batch/epic/tpcc.hpp"
#include "batch/epic/workloads.hpp"
#include "gpu/device.hpp"
#include "index/lslab/map.hpp"
#include "gpu/host_copy.hpp"

namespace duet::batch::epic {

namespace {

#define EPIC_CUDA(call)                                                           \
  do {                                                                            \
    cudaError_t e_ = (call);                                                      \
    if (e_ != cudaSuccess) {                                                      \
      if (err) *err = std::string(#call) + ": " + cudaGetErrorString(e_);         \
      return false;                                                               \
    }                                                                             \
  } while (0)

// A grow-only device buffer.
template <class T>
struct DevBuf {
  T* p = nullptr;
  std::size_t cap = 0;
  ~DevBuf() { if (p) cudaFree(p); }
  bool reserve(std::size_t n, std::string* err) {
    if (n <= cap) return true;
    if (p) cudaFree(p);
    p = nullptr;
    cap = 0;
    const std::size_t want = std::max<std::size_t>(n, 1);
    EPIC_CUDA(cudaMalloc(&p, want * sizeof(T)));
    cap = want;
    return true;
  }
  bool put(const T* src, std::size_t n, std::string* err, cudaStream_t s = 0) {
    if (!reserve(n, err)) return false;
    if (n) EPIC_CUDA(cudaMemcpyAsync(p, src, n * sizeof(T), cudaMemcpyHostToDevice, s));
    return true;
  }
  bool get(T* dst, std::size_t n, std::string* err, cudaStream_t s = 0) const {
    if (n) EPIC_CUDA(cudaMemcpyAsync(dst, p, n * sizeof(T), cudaMemcpyDeviceToHost, s));
    return true;
  }
};

// A grow-only pinned host buffer: the one staging buffer each way per epoch.
struct PinnedBuf {
  unsigned char* p = nullptr;
  std::size_t cap = 0;
  ~PinnedBuf() { if (p) cudaFreeHost(p); }
  bool reserve(std::size_t n, std::string* err) {
    if (n <= cap) return true;
    if (p) cudaFreeHost(p);
    p = nullptr;
    cap = 0;
    const std::size_t want = std::max<std::size_t>(n + n / 4, std::size_t{1} << 20);
    EPIC_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&p), want, cudaHostAllocDefault));
    cap = want;
    return true;
  }
};


struct RecordOf {
  __host__ __device__ std::uint32_t operator()(std::uint64_t op) const { return op_record(op); }
};
struct WriteOf {
  __host__ __device__ std::uint32_t operator()(std::uint64_t op) const { return op_is_write(op) ? 1u : 0u; }
};

// Kernels over every op of every txn run a warp per txn, its lanes striding over the txn's ops, so
// the per-op arrays are written in whole lines (a thread per txn wrote one element per line).
constexpr unsigned kWarpsPerBlock = 8;
inline unsigned blocks_for_warps(std::size_t n) { return static_cast<unsigned>((n + kWarpsPerBlock - 1) / kWarpsPerBlock); }
__device__ inline std::uint32_t warp_txn() { return (blockIdx.x * blockDim.x + threadIdx.x) / 32; }

__global__ void pack_kernel(const std::uint32_t* global, const std::uint32_t* op_begin, const std::uint16_t* nreads,
                            std::uint32_t n, std::uint64_t* ops) {
  const std::uint32_t t = warp_txn();
  if (t >= n) return;
  const std::uint32_t b = op_begin[t], e = op_begin[t + 1], nr = nreads[t];
  for (std::uint32_t i = threadIdx.x % 32; i < e - b; i += 32) ops[b + i] = pack_op(global[b + i], t, i >= nr, i);
}

__global__ void classify_kernel(const std::uint64_t* ops, const std::uint32_t* wb, const std::uint32_t* wa,
                                std::size_t m, std::uint8_t* type, std::uint32_t* is_temp) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i >= m) return;
  const OpType t = classify(op_is_write(ops[i]), wb[i], wa[i]);
  type[i] = t;
  is_temp[i] = t == kTempWrite;
}

__global__ void scatter_kernel(const std::uint64_t* ops, const std::uint32_t* wb, const std::uint8_t* type,
                               const std::uint32_t* tw, const std::uint32_t* op_begin, std::size_t m,
                               std::uint32_t* loc, std::uint32_t* copy) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i >= m) return;
  const std::uint64_t op = ops[i];
  const std::size_t dst = op_begin[op_txn(op)] + op_index(op);
  loc[dst] = location(static_cast<OpType>(type[i]), tw[i]);
  copy[dst] = copy_location(op_is_write(op), wb[i], tw[i]);
}

// ---------------------------------------------------------------- indexing (L-Slab, insert-first)
/// Per table: its global id base, capacity and whether it is indexed.
struct TableMeta {
  std::uint32_t base, cap, indexed;
};

// Per txn: each op's table and write flag; direct tables' ids (key < capacity, else kInvalid) and
// global ids. Indexed tables' ops are filled by lookup_scatter_kernel. Where `seg` is not null
// (some table is indexed), each op also gets its segment (indexed table t: 2t for a write, 2t + 1
// for a read; 2 * ntables for every other op) and its position, for the one stable sort that
// groups every indexed table's ops; a write of the reserved key to an indexed table records
// max(ntables - t) in *bad (the lowest such table).
__global__ void prep_kernel(const std::uint64_t* key, const std::uint8_t* ktable, const std::uint32_t* op_begin,
                            const std::uint16_t* nreads, std::uint32_t n, const TableMeta* meta, std::uint32_t ntables,
                            std::uint8_t* table, std::uint8_t* isw, std::uint32_t* rid, std::uint32_t* global,
                            std::uint16_t* seg, std::uint32_t* pos, std::uint32_t* bad) {
  const std::uint32_t t = warp_txn();
  if (t >= n) return;
  const std::uint32_t b = op_begin[t], e = op_begin[t + 1], nr = nreads[t];
  for (std::uint32_t i = b + threadIdx.x % 32; i < e; i += 32) {
    const Key k{ktable[i], key[i]};
    const bool w = i - b >= nr;
    table[i] = static_cast<std::uint8_t>(k.table);
    isw[i] = w;
    const bool indexed = k.table < ntables && meta[k.table].indexed;
    std::uint32_t r = kInvalid;
    if (k.table < ntables && !indexed && k.key < meta[k.table].cap) r = static_cast<std::uint32_t>(k.key);
    rid[i] = r;
    global[i] = r == kInvalid ? kInvalid : meta[k.table < ntables ? k.table : 0].base + r;
    if (!seg) continue;
    seg[i] = static_cast<std::uint16_t>(indexed ? 2 * k.table + (w ? 0 : 1) : 2 * ntables);
    pos[i] = i;
    if (indexed && w && k.key == lslab::kReservedKey) atomicMax(bad, ntables - k.table);
  }
}

// Over the ops sorted by segment: each segment's [start, end) (both 0 when it is empty), and the
// keys in sorted order.
__global__ void segment_bounds_kernel(const std::uint16_t* sseg, const std::uint32_t* spos, const std::uint64_t* key,
                                      std::size_t m, std::uint32_t nseg, std::uint32_t* start, std::uint32_t* end,
                                      std::uint64_t* skey) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i >= m) return;
  const std::uint16_t s = sseg[i];
  skey[i] = key[spos[i]];
  if (s >= nseg) return;
  if (i == 0 || sseg[i - 1] != s) start[s] = static_cast<std::uint32_t>(i);
  if (i + 1 == m || sseg[i + 1] != s) end[s] = static_cast<std::uint32_t>(i + 1);
}

// First-occurrence deduplication of one table's missing write keys, without sorting: a probe table
// of `mask + 1` slots (keys kEmptyKey, firsts ~0u) keeps each key's lowest request index. A
// request whose L-Slab outcome is not kNotFound takes no part (the reserved key never reaches it).
__device__ inline std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
constexpr std::uint64_t kEmptyKey = ~std::uint64_t{0};
__global__ void dedup_insert_kernel(const std::uint64_t* keys, const lslab::OpStatus* st, std::size_t n,
                                    std::uint64_t* hkey, std::uint32_t* hfirst, std::uint64_t mask, std::uint32_t* slot) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (j >= n) return;
  if (st[j] != lslab::OpStatus::kNotFound) {
    slot[j] = kInvalid;
    return;
  }
  const std::uint64_t k = keys[j];
  for (std::uint64_t h = mix64(k) & mask;; h = (h + 1) & mask) {
    const unsigned long long prev = atomicCAS(reinterpret_cast<unsigned long long*>(hkey + h),
                                              static_cast<unsigned long long>(kEmptyKey), static_cast<unsigned long long>(k));
    if (prev == kEmptyKey || prev == k) {
      atomicMin(hfirst + h, static_cast<std::uint32_t>(j));
      slot[j] = static_cast<std::uint32_t>(h);
      return;
    }
  }
}
__global__ void dedup_mark_kernel(const std::uint32_t* slot, const std::uint32_t* hfirst, std::size_t n,
                                  std::uint8_t* first) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (j >= n) return;
  first[j] = slot[j] != kInvalid && hfirst[slot[j]] == j;
}

struct NonZero {
  __host__ __device__ bool operator()(std::uint8_t x) const { return x != 0; }
};

// The per-array transfer mode uploads Key structs as they are; this splits them as the packed
// mode uploads them (8-byte keys, 1-byte tables).
__global__ void split_keys_kernel(const Key* keys, std::size_t m, std::uint64_t* key, std::uint8_t* table) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i >= m) return;
  key[i] = keys[i].key;
  table[i] = static_cast<std::uint8_t>(keys[i].table);
}
__global__ void fill_ops_kernel(lslab::Op* ops, std::size_t n, lslab::Op op) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (j < n) ops[j] = op;
}
// The i-th new key (first-occurrence order) takes the ring's i-th id from the head.
__global__ void assign_kernel(const std::uint64_t* keys, std::size_t u, const std::uint32_t* ring, std::uint32_t cap,
                              std::uint32_t head, std::uint64_t* backlink, std::uint64_t* ids) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i >= u) return;
  const std::uint32_t id = ring[(head + i) % cap];
  ids[i] = id;
  backlink[id] = keys[i];
}
__global__ void lookup_scatter_kernel(const std::uint32_t* sel, std::size_t n, const lslab::OpStatus* st,
                                      const std::uint64_t* vals, std::uint32_t base, std::uint32_t* rid,
                                      std::uint32_t* global) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (j >= n) return;
  const bool found = st[j] == lslab::OpStatus::kFound;
  const std::uint32_t r = found ? static_cast<std::uint32_t>(vals[j]) : kInvalid;
  rid[sel[j]] = r;
  global[sel[j]] = found ? base + r : kInvalid;
}
// Freed ids (in id order) go to the ring's tail; their keys (through the back-link) are listed
// for deletion from the map.
__global__ void free_kernel(const std::uint32_t* list, std::size_t f, std::uint8_t* deleted, std::uint32_t* ring,
                            std::uint32_t cap, std::uint32_t tail, const std::uint64_t* backlink, std::uint64_t* keys) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (j >= f) return;
  const std::uint32_t r = list[j];
  if (deleted) deleted[r] = 0;
  ring[(tail + j) % cap] = r;
  keys[j] = backlink[r];
}

// ---------------------------------------------------------------- execution
__device__ inline std::uint64_t vload64(const std::uint64_t* p) { return *reinterpret_cast<const volatile std::uint64_t*>(p); }
__device__ inline std::uint32_t vload32(const std::uint32_t* p) { return *reinterpret_cast<const volatile std::uint32_t*>(p); }
__device__ inline void vstore64(std::uint64_t* p, std::uint64_t v) { *reinterpret_cast<volatile std::uint64_t*>(p) = v; }
// The GPU's global nanosecond timer (the same clock on every SM; DUET_EPIC_EXEC_TIMES).
__device__ inline std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// A version's slot word is read with acquire and stored with release (device scope): a reader
// that sees a write's eid sees its data, with no full fence on either side (a fence.sc costs a
// round trip to L2 on every link of a chain of txns through one record).
template <class T>
__device__ inline T acquire_load(const T* p) {
  return cuda::atomic_ref<T, cuda::thread_scope_device>(*const_cast<T*>(p)).load(cuda::memory_order_acquire);
}
// A store, not an exchange: the writer does not wait for a reply before its next write.
template <class T>
__device__ inline void release_store(T* p, T v) {
  cuda::atomic_ref<T, cuda::thread_scope_device>(*p).store(v, cuda::memory_order_release);
}

/// The warp's procedure context: every lane runs the procedure with the same values. Before the
/// procedure runs, gather() has the lanes wait for the versions of all its reads at once (lane
/// i waits for reads i, i + 32, ...) and keeps where the first 128 reads are and their record
/// sizes, and the slot words of the writes; lanes copy record words strided by 32, and each
/// write is published as soon as its data is stored. So a txn waits once for all its reads, not once per key in turn.
class GpuCtx {
 public:
  /// `stash` is the warp's 64 words of shared memory.
  __device__ GpuCtx(const EpochView& v, std::uint32_t t, std::uint32_t lane, std::uint64_t watchdog, std::uint32_t* stash)
      : v_(v), stash_(stash), t_(t), lane_(lane), ob_(v.op_begin[t]), nr_(v.nreads[t]), nw_(v.op_begin[t + 1] - v.op_begin[t] - v.nreads[t]),
        ab_(v.arg_begin[t]), na_(v.arg_begin[t + 1] - v.arg_begin[t]), watchdog_(watchdog) {}
  /// Resolves where writes 0..31 go (lane j holds write j's target; later writes resolve theirs
  /// when written), then waits for every read's version (all lanes at once, each with its own
  /// watchdog), keeps the locations and word counts of reads 0..127 in registers (lane l holds
  /// reads l, l + 32, l + 64 and l + 96), and syncs the warp, so every lane may read the data.
  /// Call once, before the procedure. The targets' loads are issued before the waits, so a txn
  /// at the head of a chain stores without a round trip to memory first.
  __device__ void gather() {
    if (lane_ < nw_) wt_ = target(lane_);
    for (std::uint32_t i = lane_; v_.gather_reads && i < nr_; i += 32) {
      const std::uint32_t op = ob_ + i;
      unsigned long long p = 0;
      std::uint32_t ok = 0, words;
      if (v_.rid[op] != kInvalid) {
        std::uint32_t word;
        // A paired version's data came with its poll: keep it in the warp's stash, so the
        // procedure does not load it again.
        if (locate(op, v_.loc[op], &p, &ok, &word, &words) && i < 64)
          stash_[i] = word, p = reinterpret_cast<unsigned long long>(stash_ + i);
      } else {
        words = v_.tables[v_.op_table[op]].words;
      }
      // Scalars chosen by a branch on the uniform i / 32: an indexed array would live in local
      // memory.
      if (i < 32) rptr0_ = p, rw0_ = words, rok_ |= ok;
      else if (i < 64) rptr1_ = p, rw1_ = words, rok_ |= ok << 1;
      else if (i < 96) rptr2_ = p, rw2_ = words, rok_ |= ok << 2;
      else if (i < kGathered) rptr3_ = p, rw3_ = words, rok_ |= ok << 3;
    }
    __syncwarp();  // each lane's acquire load, then the warp's barrier: every lane sees the data
  }
  __device__ std::uint32_t nreads() const { return nr_; }
  __device__ std::uint32_t nwrites() const { return nw_; }
  __device__ std::uint32_t nargs() const { return na_; }
  __device__ std::uint32_t arg(std::uint32_t i) const { return i < na_ ? v_.args[ab_ + i] : 0; }
  __device__ std::uint32_t attempt() const { return v_.attempt[t_]; }
  /// Read i's record size in words (0 past the reads). A gathered read's comes from its lane's
  /// registers: no load (a table byte, then the table's size: two dependent L2 round trips).
  /// Called on every lane with the same i, as read().
  __device__ std::uint32_t read_words(std::uint32_t i) const {
    if (i >= nr_) return 0;
    if (i < kGathered && v_.gather_reads) return __shfl_sync(0xFFFFFFFFu, pick(i / 32, rw0_, rw1_, rw2_, rw3_), i % 32);
    return v_.tables[v_.op_table[ob_ + i]].words;
  }
  __device__ std::uint32_t write_words(std::uint32_t i) const {
    return i < nw_ ? v_.tables[v_.op_table[ob_ + nr_ + i]].words : 0;
  }
  __device__ const std::uint32_t* read(std::uint32_t i) {
    if (i >= nr_ || wrote_) return illegal(), nullptr;
    if (i < kGathered && v_.gather_reads) {  // gathered: lane i % 32 holds it (i is the same on every lane)
      const unsigned long long p = __shfl_sync(0xFFFFFFFFu, pick(i / 32, rptr0_, rptr1_, rptr2_, rptr3_), i % 32);
      const std::uint32_t ok = __shfl_sync(0xFFFFFFFFu, rok_ >> (i / 32) & 1u, i % 32);
      return ok ? reinterpret_cast<const std::uint32_t*>(p) : nullptr;
    }
    const std::uint32_t op = ob_ + i;
    if (v_.rid[op] == kInvalid) return nullptr;
    bool valid;
    const std::uint32_t* d = resolve(op, v_.loc[op], &valid);  // with gather_reads, gather() waited: no spin
    return valid ? d : nullptr;
  }
  template <class F>
  __device__ void write(std::uint32_t i, F f) {
    if (!writable(i)) return;
    put(i, 1, f);
  }
  __device__ void write_copy(std::uint32_t i, const std::uint32_t* src) {
    write(i, [src](std::uint32_t w) { return src[w]; });
  }
  __device__ void remove(std::uint32_t i) {
    if (!writable(i)) return;
    put(i, 0, [](std::uint32_t) { return 0u; });
  }
  __device__ void abort(std::uint32_t reason) { stop(kAborted, reason); }
  __device__ void rerun() { stop(kRerun, 0); }
  __device__ void out(std::uint32_t k, std::uint32_t val) {
    if (k < kMaxOut && lane_ == 0) v_.out[static_cast<std::size_t>(t_) * kMaxOut + k] = val;
  }
  __device__ bool stopped() const { return aborted_; }
  /// When the txn's first write was published (globaltimer ns; 0 unless exec_times is on).
  __device__ std::uint64_t first_publish() const { return first_publish_; }
  __device__ void set_outcome(std::uint32_t o) { outcome_ = o; aborted_ = true; }
  /// Fills the writes the procedure left with copies of the previous versions, and stores the
  /// outcome.
  __device__ void finish() {
    if (!v_.skip_abort_fill || !aborted_)
      for (std::uint32_t i = 0; i < nw_; ++i) {
        if (filled_ >> i & 1u) continue;
        const std::uint32_t op = ob_ + nr_ + i;
        bool valid;
        const std::uint32_t* src = resolve(op, v_.copy[op], &valid);
        put(i, valid ? 1u : 0u, [src](std::uint32_t w) { return src[w]; });
      }
    // Deleted bits of indexed rows (read only at the epoch's end), after every write is published.
    for (std::uint32_t j = lane_; j < nw_; j += 32) {
      const std::uint32_t op = ob_ + nr_ + j;
      if (!(filled_ >> j & 1u) || v_.loc[op] != kCurr) continue;
      const TableView& tb = v_.tables[v_.op_table[op]];
      if (tb.indexed) tb.deleted[v_.rid[op]] = (valid_ >> j & 1u) ? 0 : 1;
    }
    if (lane_ == 0) v_.outcome[t_] = outcome_;
  }

 private:
  static constexpr std::uint32_t kGathered = 128;  ///< reads whose place gather() keeps in registers
  template <class T>
  __device__ static T pick(std::uint32_t q, T a, T b, T c, T d) { return q == 0 ? a : q == 1 ? b : q == 2 ? c : d; }
  __device__ void illegal() { outcome_ = kIllegal; }
  __device__ bool writable(std::uint32_t i) {
    if (aborted_ || i >= nw_ || (filled_ >> i & 1u)) return illegal(), false;
    wrote_ = true;
    return true;
  }
  __device__ void stop(std::uint32_t o, std::uint32_t reason) {
    if (wrote_) return illegal();
    if (aborted_) return;
    aborted_ = true;
    if (outcome_ == kIllegal) return;  // a rule broken earlier (a bad index) stays the outcome
    outcome_ = o;
    out(0, reason);
  }
  // A spinning lane sleeps longer each time (spinning warps would otherwise take issue slots and
  // memory bandwidth from the warps they wait on); false once the watchdog fired.
  __device__ bool wait_step(long long start, unsigned& spins) {
    const unsigned ns = spins < 8 ? 32u << spins : 4096u;  // then capped at max_backoff_ns
    __nanosleep(ns < v_.max_backoff_ns ? ns : v_.max_backoff_ns);
    if (!v_.stuck || ++spins % 16 != 0) return true;
    if (vload32(v_.stuck)) return false;
    if (watchdog_ && static_cast<std::uint64_t>(clock64() - start) > watchdog_) {
      atomicCAS(v_.stuck, 0u, t_ + 1);
      return false;
    }
    return true;
  }
  // On the calling lane alone: waits for op's version at `loc` (its eid is this epoch's, or it is
  // kPrev) and gives its data and valid bit. Its slot word is read with acquire, so once the
  // warp syncs every lane sees the data. A paired (one-word) version is read whole, data and eid
  // in one 64-bit acquire load; then *word is its data (given `word`) and it returns true, and
  // the pointer (to the word's high half) is safe too, for the writer stored it with release.
  __device__ bool locate(std::uint32_t op, std::uint32_t loc, unsigned long long* ptr, std::uint32_t* ok,
                         std::uint32_t* word = nullptr, std::uint32_t* words = nullptr) {
    const TableView tb = v_.tables[v_.op_table[op]];  // a copy: every field loaded at once
    if (words) *words = tb.words;
    const std::uint32_t r = v_.rid[op];
    const long long start = clock64();
    unsigned spins = 0;
    if (loc != kPrev && loc != kCurr) {
      std::uint32_t x;
      while (((x = acquire_load(v_.scratch_word + loc)) >> 1) != v_.eid)
        if (!wait_step(start, spins)) break;
      *ok = x & 1u;
      *ptr = reinterpret_cast<unsigned long long>(v_.scratch_data + static_cast<std::size_t>(loc) * v_.slot_words);
      return false;
    }
    if (tb.pairs) {
      const std::uint64_t* pr = tb.pairs + static_cast<std::size_t>(r) * 2;
      // Two separate loads may see the curr slot before or after its write: either way the
      // curr slot is the same (Alg. 1), and the prev slot does not change this epoch.
      const int cs = curr_slot(both_of(tb, r), v_.eid);
      const int s = loc == kPrev ? 1 - cs : cs;
      std::uint64_t x = loc == kCurr ? acquire_load(pr + s) : vload64(pr + s);  // prev: an earlier epoch's
      if (loc == kCurr)
        while ((static_cast<std::uint32_t>(x) >> 1) != v_.eid) {
          if (!wait_step(start, spins)) break;
          x = acquire_load(pr + s);
        }
      *ok = static_cast<std::uint32_t>(x) & 1u;
      *ptr = reinterpret_cast<unsigned long long>(reinterpret_cast<const std::uint32_t*>(pr + s) + 1);
      if (word) *word = static_cast<std::uint32_t>(x >> 32);
      return word != nullptr;
    }
    std::uint64_t both = acquire_load(tb.slots + r);
    const int cs = curr_slot(both, v_.eid);
    const int s = loc == kPrev ? 1 - cs : cs;
    if (loc == kCurr)
      while ((slot_word(both, s) >> 1) != v_.eid) {
        if (!wait_step(start, spins)) break;
        both = acquire_load(tb.slots + r);
      }
    *ok = slot_word(both, s) & 1u;
    *ptr = reinterpret_cast<unsigned long long>(tb.data + (static_cast<std::size_t>(r) * 2 + s) * tb.words);
    return false;
  }
  // Both slot words of record r (slot 0 in the low half), packed or not.
  __device__ static std::uint64_t both_of(const TableView& tb, std::uint32_t r) {
    if (!tb.pairs) return vload64(tb.slots + r);
    const std::uint64_t* pr = tb.pairs + static_cast<std::size_t>(r) * 2;
    return static_cast<std::uint32_t>(vload64(pr)) | (static_cast<std::uint64_t>(vload64(pr + 1)) << 32);
  }
  // locate() on lane 0, given to every lane after the warp's barrier.
  __device__ const std::uint32_t* resolve(std::uint32_t op, std::uint32_t loc, bool* valid) {
    unsigned long long ptr = 0;
    std::uint32_t ok = 0;
    if (lane_ == 0) locate(op, loc, &ptr, &ok);
    __syncwarp();
    ptr = __shfl_sync(0xFFFFFFFFu, ptr, 0);
    ok = __shfl_sync(0xFFFFFFFFu, ok, 0);
    *valid = ok;
    return reinterpret_cast<const std::uint32_t*>(ptr);
  }
  // Where a write goes: its data (`dst`: the data slot, the scratchpad data, or for a paired
  // table the slot's 64-bit word), where its eid is published (`pub`: the record's slot words or
  // the scratchpad word; unused when paired), the record's slot words as first read (`both`,
  // kCurr only: only this txn changes them this epoch) and `meta` (words, kCurr, paired).
  struct Target {
    unsigned long long dst = 0, pub = 0;
    std::uint64_t both = 0;
    std::uint32_t meta = 0;
  };
  static constexpr std::uint32_t kTargetCurr = 1u << 31, kTargetPaired = 1u << 30, kTargetWords = (1u << 30) - 1;
  // Write j's target, from memory (on the calling lane).
  __device__ Target target(std::uint32_t j) const {
    const std::uint32_t op = ob_ + nr_ + j, loc = v_.loc[op];
    const TableView tb = v_.tables[v_.op_table[op]];
    Target w;
    if (loc != kCurr) {
      w.dst = reinterpret_cast<unsigned long long>(v_.scratch_data + static_cast<std::size_t>(loc) * v_.slot_words);
      w.pub = reinterpret_cast<unsigned long long>(v_.scratch_word + loc);
      w.meta = tb.words;
      return w;
    }
    const std::uint32_t r = v_.rid[op];
    w.both = both_of(tb, r);
    const int cs = curr_slot(w.both, v_.eid);
    if (tb.pairs) {
      w.dst = reinterpret_cast<unsigned long long>(tb.pairs + static_cast<std::size_t>(r) * 2 + cs);
      w.meta = 1u | kTargetCurr | kTargetPaired;
    } else {
      w.dst = reinterpret_cast<unsigned long long>(tb.data + (static_cast<std::size_t>(r) * 2 + cs) * tb.words);
      w.pub = reinterpret_cast<unsigned long long>(tb.slots + r);
      w.meta = tb.words | kTargetCurr;
    }
    return w;
  }
  // Write i's target on every lane: from lane i's registers for i < 32, else from memory.
  __device__ Target target_of(std::uint32_t i) const {
    if (i >= 32) return target(i);
    Target w;
    w.dst = __shfl_sync(0xFFFFFFFFu, wt_.dst, i);
    w.pub = __shfl_sync(0xFFFFFFFFu, wt_.pub, i);
    w.both = __shfl_sync(0xFFFFFFFFu, wt_.both, i);
    w.meta = __shfl_sync(0xFFFFFFFFu, wt_.meta, i);
    return w;
  }
  // Stores a (not paired) write's eid (with `valid`) on the calling lane.
  __device__ void publish(const Target& w, std::uint32_t valid) const {
    const std::uint32_t word = (v_.eid << 1) | valid;
    if (w.meta & kTargetCurr)
      release_store(reinterpret_cast<std::uint64_t*>(w.pub), with_slot_word(w.both, curr_slot(w.both, v_.eid), word));
    else
      release_store(reinterpret_cast<std::uint32_t*>(w.pub), word);
  }
  // Stores write i's data, then publishes it: the warp syncs (ordering every lane's stores
  // before the next step), and lane i % 32 stores the eid with release. A paired write is one
  // release store of data and eid together. Each write is published at once: a chain through
  // this record goes on while the txn writes its other keys. The planted eid_before_data
  // publishes first (a paired write: with the old data) and sleeps, so a waiting reader copies
  // the old data.
  template <class F>
  __device__ void put(std::uint32_t i, std::uint32_t valid, F f) {
    filled_ |= 1ull << i;
    if (valid) valid_ |= 1ull << i;
    const Target w = target_of(i);
    if (w.meta & kTargetPaired) {
      if (lane_ == i % 32) {
        auto* pr = reinterpret_cast<std::uint64_t*>(w.dst);
        const std::uint32_t word = (v_.eid << 1) | valid;
        const std::uint32_t old = !valid || v_.eid_before_data ? static_cast<std::uint32_t>(vload64(pr) >> 32) : 0;
        if (v_.eid_before_data) {
          vstore64(pr, (static_cast<std::uint64_t>(old) << 32) | word);
          __nanosleep(20000);
        }
        release_store(pr, (static_cast<std::uint64_t>(valid ? f(0) : old) << 32) | word);
      }
    } else {
      auto* dst = reinterpret_cast<std::uint32_t*>(w.dst);
      if (v_.eid_before_data) {
        if (lane_ == i % 32) publish(w, valid);
        __syncwarp();
        __nanosleep(20000);
      }
      if (valid)
        for (std::uint32_t k = lane_; k < (w.meta & kTargetWords); k += 32) dst[k] = f(k);
      __syncwarp();
      if (lane_ == i % 32 && !v_.eid_before_data) publish(w, valid);
    }
    __syncwarp();
    if (v_.exec_times && !first_publish_) first_publish_ = global_ns();
  }

  const EpochView& v_;
  std::uint32_t* stash_;
  std::uint32_t t_, lane_, ob_, nr_, nw_, ab_, na_;
  std::uint64_t watchdog_;
  std::uint64_t filled_ = 0;
  // Scalars, not arrays: arrays indexed at run time put the context in local memory (280 more
  // bytes of stack frame per thread, by ptxas -v).
  unsigned long long rptr0_ = 0, rptr1_ = 0, rptr2_ = 0, rptr3_ = 0;  ///< gathered reads lane + 32 q, q = 0..3
  std::uint32_t rw0_ = 0, rw1_ = 0, rw2_ = 0, rw3_ = 0;              ///< their record sizes in words
  std::uint32_t rok_ = 0;  ///< their valid bits (bit q: read lane + 32 q)
  Target wt_;                                 ///< write `lane`'s target (lanes below nw_)
  std::uint64_t valid_ = 0;                   ///< the valid bit each filled write stored
  bool wrote_ = false, aborted_ = false;
  std::uint32_t outcome_ = kCommitted;
  std::uint64_t first_publish_ = 0;  ///< when the first write was published (exec_times only)
};

template <class Procs>
__global__ void exec_kernel(EpochView v, std::uint32_t* next, BlockOrder order, std::uint64_t watchdog) {
  __shared__ std::uint32_t base;
  const std::uint32_t wpb = blockDim.x / 32, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // Txns reach warps in serial order: a block grabs its range when it starts (never blockIdx;
  // the other orders are the negative control).
  if (threadIdx.x == 0)
    base = order == BlockOrder::kCounter      ? atomicAdd(next, wpb)
           : order == BlockOrder::kBlockIndex ? blockIdx.x * wpb
                                              : (gridDim.x - 1 - blockIdx.x) * wpb;
  __syncthreads();
  const std::uint32_t t = base + warp;
  if (t >= v.n) return;
  const std::uint64_t start = v.exec_times ? global_ns() : 0;
  extern __shared__ std::uint32_t stash[];  // 64 words per warp, then DUET_EPIC_EXEC_SMEM's bytes
  GpuCtx c(v, t, lane, watchdog, stash + warp * 64);
  c.gather();
  const std::uint64_t gathered = v.exec_times ? global_ns() : 0;
  if (!Procs::dispatch(v.proc[t], c)) c.set_outcome(kUnknownProc);
  c.finish();
  if (v.exec_times && lane == 0) {
    std::uint64_t* ts = v.exec_times + static_cast<std::size_t>(t) * 4;
    ts[0] = start, ts[1] = gathered, ts[2] = c.first_publish(), ts[3] = global_ns();
  }
}

__global__ void gc_kernel(std::uint8_t* deleted, std::uint32_t cap, std::uint32_t* list, std::uint32_t* count) {
  const std::uint32_t r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= cap || !deleted[r]) return;
  deleted[r] = 0;
  list[atomicAdd(count, 1u)] = r;
}

inline unsigned blocks_for(std::size_t n, unsigned b) { return static_cast<unsigned>((n + b - 1) / b); }

template <class Procs>
class Runner final : public GpuRunner {
 public:
  ~Runner() override {
    for (auto& t : tables_) free_table(t);
  }
  // Frees a device table's arrays and clears its pointers.
  static void free_table(TableView& t) {
    for (void* p : {static_cast<void*>(t.slots), static_cast<void*>(t.data), static_cast<void*>(t.deleted),
                    static_cast<void*>(t.pairs)})
      if (p) cudaFree(p);
    t.slots = nullptr, t.data = nullptr, t.deleted = nullptr, t.pairs = nullptr;
  }

  bool plan(const Batch& b, const std::vector<std::uint32_t>& global, Plan* out, std::string* err,
            GpuTimes* times) override {
    const auto t0 = std::chrono::steady_clock::now();
    if (!put_plan_inputs(b, global, err)) return false;
    EPIC_CUDA(cudaDeviceSynchronize());
    const auto t1 = std::chrono::steady_clock::now();
    if (!plan_device(b.size(), b.keys.size(), err)) return false;
    EPIC_CUDA(cudaDeviceSynchronize());
    const auto t2 = std::chrono::steady_clock::now();
    const std::size_t m = b.keys.size();
    out->loc.resize(m);
    out->copy.resize(m);
    out->temp_count = temp_count_;
    if (!loc_.get(out->loc.data(), m, err) || !copy_.get(out->copy.data(), m, err)) return false;
    EPIC_CUDA(cudaDeviceSynchronize());
    if (times) {
      times->h2d_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
      times->plan_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
      times->d2h_ms = ms_since(t2);
    }
    return true;
  }

  bool upload(const Database& db, std::string* err) override {
    tables_.resize(db.num_tables());
    for (std::size_t i = 0; i < tables_.size(); ++i) {
      const TableStore& t = db.table(static_cast<std::uint32_t>(i));
      TableView& d = tables_[i];
      free_table(d);
      d.words = t.spec.record_words;
      d.indexed = t.spec.indexed;
      EPIC_CUDA(cudaMalloc(&d.deleted, std::max<std::size_t>(1, t.deleted.size())));
      EPIC_CUDA(::duet::gpu::copy_to_device(d.deleted, t.deleted.data(), t.deleted.size()));
      if (d.words == 1) {  // paired: (data << 32) | slot word per slot
        std::vector<std::uint64_t> pairs(t.slots.size() * 2);
        for (std::size_t r = 0; r < t.slots.size(); ++r)
          for (int s = 0; s < 2; ++s)
            pairs[2 * r + s] = (static_cast<std::uint64_t>(t.data[2 * r + s]) << 32) | slot_word(t.slots[r], s);
        EPIC_CUDA(cudaMalloc(&d.pairs, std::max<std::size_t>(1, pairs.size()) * 8));
        EPIC_CUDA(::duet::gpu::copy_to_device(d.pairs, pairs.data(), pairs.size() * 8));
        continue;
      }
      EPIC_CUDA(cudaMalloc(&d.slots, std::max<std::size_t>(1, t.slots.size()) * 8));
      EPIC_CUDA(cudaMalloc(&d.data, std::max<std::size_t>(1, t.data.size()) * 4));
      EPIC_CUDA(::duet::gpu::copy_to_device(d.slots, t.slots.data(), t.slots.size() * 8));
      EPIC_CUDA(::duet::gpu::copy_to_device(d.data, t.data.data(), t.data.size() * 4));
    }
    if (!dtables_.put(tables_.data(), tables_.size(), err)) return false;
    slot_words_ = db.max_words();
    any_paired_ = std::any_of(tables_.begin(), tables_.end(), [](const TableView& t) { return t.pairs != nullptr; });
    gpu_index_ = index_on_ == IndexOn::kGpu;
    attached_ = false;
    if (gpu_index_ && !upload_index(db, err)) return false;
    EPIC_CUDA(cudaDeviceSynchronize());
    return true;
  }

  // One record of a paired (one-word) table, its two words (data << 32 | slot word, per slot),
  // as the host keeps it: its slot words in *both, slot s's data in data[s].
  static void unpair(const std::uint64_t* p, std::uint64_t* both, std::uint32_t* data) {
    *both = static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint64_t>(static_cast<std::uint32_t>(p[1])) << 32);
    data[0] = static_cast<std::uint32_t>(p[0] >> 32), data[1] = static_cast<std::uint32_t>(p[1] >> 32);
  }

  bool download(Database& db, std::string* err) override {
    for (std::size_t i = 0; i < tables_.size(); ++i) {
      TableStore& t = db.table(static_cast<std::uint32_t>(i));
      if (tables_[i].pairs) {
        std::vector<std::uint64_t> pairs(t.slots.size() * 2);
        EPIC_CUDA(cudaMemcpy(pairs.data(), tables_[i].pairs, pairs.size() * 8, cudaMemcpyDeviceToHost));
        for (std::size_t r = 0; r < t.slots.size(); ++r) unpair(&pairs[2 * r], &t.slots[r], &t.data[2 * r]);
        continue;
      }
      EPIC_CUDA(cudaMemcpy(t.slots.data(), tables_[i].slots, t.slots.size() * 8, cudaMemcpyDeviceToHost));
      EPIC_CUDA(cudaMemcpy(t.data.data(), tables_[i].data, t.data.size() * 4, cudaMemcpyDeviceToHost));
    }
    return !gpu_index_ || download_index(db, err);
  }

  void set_index_on(IndexOn where) override { index_on_ = where; }
  IndexOn index_on() const override { return index_on_; }

  bool index(const Database& db, const Batch& b, Indexed* out, std::string* err) override {
    if (!gpu_index_ || dix_.size() != db.num_tables()) return *err = "GPU index not uploaded", false;
    const std::size_t n = b.size(), m = b.keys.size();
    if (!put_keys(b, false, err)) return false;
    if (!device_index(db, n, m, err)) return false;
    out->table.resize(m);
    out->rid.resize(m);
    out->global.resize(m);
    if (!op_table_.get(out->table.data(), m, err) || !rid_.get(out->rid.data(), m, err) ||
        !global_.get(out->global.data(), m, err))
      return false;
    EPIC_CUDA(cudaDeviceSynchronize());
    return true;
  }

  void set_faults(const Faults& f) override { faults_ = f; }
  void set_watchdog_cycles(std::uint64_t cycles) override { watchdog_cycles_ = cycles; }

  bool run_epoch(Database& db, const Batch& b, EpochOutput* out, std::string* err, GpuTimes* times, int wpb,
                 BlockOrder order) override {
    const auto t0 = std::chrono::steady_clock::now();
    state_changed_ = false;
    if (tables_.empty()) return *err = "tables not uploaded", false;
    const std::size_t n = b.size(), m = b.keys.size();
    auto t1 = std::chrono::steady_clock::now();
    double h2d = 0, index_ms = 0;
    if (gpu_index_) {
      // The keys cross the bus once; ids, lookups and global ids stay on the device for planning.
      if (dix_.size() != db.num_tables()) return *err = "GPU index not uploaded", false;
      if (!put_keys(b, true, err)) return false;
      EPIC_CUDA(cudaDeviceSynchronize());
      h2d = ms_since(t1);
      t1 = std::chrono::steady_clock::now();
      if (!device_index(db, n, m, err)) return false;
      index_ms = ms_since(t1);
    } else {
      Indexed& ix = host_ix_;
      if (!db.index(b, &ix, err)) return false;
      state_changed_ = true;  // the host index took the epoch's inserts
      index_ms = ms_since(t1);
      t1 = std::chrono::steady_clock::now();
      if (!put_plan_inputs(b, ix.global, err) || !put_exec_inputs(b, err) || !op_table_.put(ix.table.data(), m, err) ||
          !rid_.put(ix.rid.data(), m, err))
        return false;
      EPIC_CUDA(cudaDeviceSynchronize());
      h2d = ms_since(t1);
    }
    out->stats.index_ms = index_ms;
    t1 = std::chrono::steady_clock::now();
    if (!plan_device(n, m, err)) return false;
    EPIC_CUDA(cudaDeviceSynchronize());
    const double plan = ms_since(t1);
    t1 = std::chrono::steady_clock::now();
    // A scratch word equal to this epoch's (eid << 1 | valid) before its writer ran would let a
    // temp read skip its wait. So the scratchpad is zeroed (eid 0, older than every epoch) when it
    // grows (fresh device memory may hold any word) and when the epoch id does not exceed the last
    // one this runner ran (another database uploaded to the same runner starts again at eid 2).
    const std::size_t scratch_cap = scratch_word_.cap;
    if (!scratch_word_.reserve(temp_count_, err)) return false;
    if (scratch_word_.cap != scratch_cap || db.eid() <= last_eid_)
      EPIC_CUDA(cudaMemset(scratch_word_.p, 0, scratch_word_.cap * 4));
    last_eid_ = db.eid();
    if (
        !scratch_data_.reserve(static_cast<std::size_t>(temp_count_) * slot_words_, err) ||
        !res_.reserve(n * (1 + kMaxOut), err) || !ctl_.reserve(2, err))
      return false;
    // Outcomes and outputs share one buffer, so that they come back in one copy.
    std::uint32_t* const outcome_p = res_.p;
    std::uint32_t* const outv_p = res_.p + n;
    if (n) EPIC_CUDA(cudaMemset(outv_p, 0, n * kMaxOut * 4));
    EPIC_CUDA(cudaMemset(ctl_.p, 0, 8));
    EpochView v;
    v.tables = dtables_.p;
    v.proc = d_proc_;
    v.op_begin = d_op_begin_;
    v.nreads = d_nreads_;
    v.arg_begin = d_arg_begin_;
    v.args = d_args_;
    v.attempt = d_attempt_;
    v.op_table = op_table_.p;
    v.rid = rid_.p;
    v.loc = loc_.p;
    v.copy = copy_.p;
    v.scratch_word = scratch_word_.p;
    v.scratch_data = scratch_data_.p;
    v.slot_words = slot_words_;
    v.eid = db.eid();
    v.n = static_cast<std::uint32_t>(n);
    v.outcome = outcome_p;
    v.out = outv_p;
    v.stuck = ctl_.p + 1;
    v.max_backoff_ns = max_backoff_ns_;
    v.gather_reads = gather_reads_;
    v.eid_before_data = faults_.eid_before_data;
    if (exec_times_on_) {
      if (!exec_times_.reserve(n * 4, err)) return false;
      v.exec_times = exec_times_.p;
    }
    if (n) {
      const unsigned threads = 32u * static_cast<unsigned>(wpb);
      // DUET_EPIC_EXEC_SMEM (bytes of shared memory per block, a diagnostic) caps the blocks
      // resident on an SM, and with them the txns polling at once.
      // Each warp has 64 words of shared memory for the paired reads it gathers (none without a
      // paired table: the stash is then never touched).
      const int smem = (any_paired_ ? wpb * 64 * 4 : 0) + std::max(exec_smem_, 0);
      if (smem > (48 << 10) - 16)  // the kernel's own shared word counts against the default 48 KB
        EPIC_CUDA(cudaFuncSetAttribute(exec_kernel<Procs>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      exec_kernel<Procs><<<blocks_for(n, wpb), threads, smem>>>(v, ctl_.p, order, watchdog_cycles_);
      EPIC_CUDA(cudaGetLastError());
    }
    EPIC_CUDA(cudaDeviceSynchronize());
    const double exec = ms_since(t1);
    std::uint32_t stuck = 0;
    EPIC_CUDA(cudaMemcpy(&stuck, ctl_.p + 1, 4, cudaMemcpyDeviceToHost));
    if (stuck) return *err = "stuck wait: txn " + std::to_string(stuck - 1) + " waited past the watchdog", false;
    if (exec_times_on_ && n && !print_exec_times(b, err)) return false;
    t1 = std::chrono::steady_clock::now();
    // Both paths overwrite every outcome and output word: sized, not filled.
    out->results.outcome.resize(n);
    out->results.out.resize(n * kMaxOut);
    if (packed_) {
      const std::size_t bytes = n * (1 + kMaxOut) * 4;
      if (!hdown_.reserve(bytes, err)) return false;
      if (n) EPIC_CUDA(cudaMemcpyAsync(hdown_.p, res_.p, bytes, cudaMemcpyDeviceToHost, 0));
      EPIC_CUDA(cudaDeviceSynchronize());
      // Out of the pinned buffer on the host threads (2 MB per 100K txns).
      const std::size_t parts = host_threads_ > 1 && bytes >= (std::size_t{1} << 20) ? static_cast<std::size_t>(host_threads_) : 1;
      const unsigned char* h = hdown_.p;
      auto* oc = reinterpret_cast<unsigned char*>(out->results.outcome.data());
      auto* ov = reinterpret_cast<unsigned char*>(out->results.out.data());
      thread_pool(host_threads_ - 1).run(parts, [&](std::size_t p) {
        const std::size_t a0 = n * 4 * p / parts, a1 = n * 4 * (p + 1) / parts;
        const std::size_t b0 = n * kMaxOut * 4 * p / parts, b1 = n * kMaxOut * 4 * (p + 1) / parts;
        if (a1 > a0) std::memcpy(oc + a0, h + a0, a1 - a0);
        if (b1 > b0) std::memcpy(ov + b0, h + n * 4 + b0, b1 - b0);
      });
    } else {
      if (n) EPIC_CUDA(cudaMemcpy(out->results.outcome.data(), outcome_p, n * 4, cudaMemcpyDeviceToHost));
      if (n) EPIC_CUDA(cudaMemcpy(out->results.out.data(), outv_p, n * kMaxOut * 4, cudaMemcpyDeviceToHost));
    }
    const double d2h = ms_since(t1);
    t1 = std::chrono::steady_clock::now();
    std::vector<std::vector<std::uint32_t>> freed(tables_.size());
    if (gpu_index_) {
      if (!device_free(db, err)) return false;
    } else
    for (std::size_t i = 0; i < tables_.size(); ++i) {
      if (!tables_[i].indexed) continue;
      const std::uint32_t cap = db.table(static_cast<std::uint32_t>(i)).spec.capacity;
      if (!gc_list_.reserve(cap, err)) return false;
      EPIC_CUDA(cudaMemset(ctl_.p, 0, 4));
      gc_kernel<<<blocks_for(cap, 256), 256>>>(tables_[i].deleted, cap, gc_list_.p, ctl_.p);
      std::uint32_t cnt = 0;
      EPIC_CUDA(cudaMemcpy(&cnt, ctl_.p, 4, cudaMemcpyDeviceToHost));
      freed[i].resize(cnt);
      if (!gc_list_.get(freed[i].data(), cnt, err)) return false;
      EPIC_CUDA(cudaDeviceSynchronize());
      std::sort(freed[i].begin(), freed[i].end());  // the CPU twin frees in id order
    }
    db.end_epoch_with(freed);
    const double gc = ms_since(t1);
    out->tag = b.tag;
    out->attempt = b.attempt;
    out->stats.txns = b.txn_count();
    out->stats.entries = n;
    out->stats.temp_count = temp_count_;
    out->stats.plan_ms = plan;
    out->stats.exec_ms = exec;
    out->stats.gc_ms = gc;
    out->stats.total_ms = ms_since(t0);
    if (times) *times = GpuTimes{h2d, plan, d2h, exec, gc, index_ms, packed_ && gpu_index_ ? pack_ms_ : 0.0};
    return true;
  }

  void set_max_backoff_ns(unsigned ns) override { max_backoff_ns_ = ns; }
  void set_gather_reads(bool on) override { gather_reads_ = on; }
  void set_packed_transfers(bool packed) override { packed_ = packed; }
  void set_host_threads(int threads) override { host_threads_ = std::max(1, threads); }

  // ---- Epic-CPU (DevicePlanner): the index lives here, tables and execution on the host.
  bool attach(const Database& db, std::string* err) override {
    attached_ = false;
    if (!upload_index(db, err)) return false;
    EPIC_CUDA(cudaDeviceSynchronize());
    attached_ = true;
    return true;
  }

  // Thrust reports a failed allocation by throwing; the planner's callers get it as an error.
  bool index_and_plan(const Database& db, const Batch& b, DevicePlan* out, std::string* err) override {
    try {
      return index_and_plan_on_device(db, b, out, err);
    } catch (const std::exception& e) {
      cudaGetLastError();
      return *err = std::string("GPU planning: ") + e.what(), false;
    }
  }

  bool last_epoch_untouched() const override { return !state_changed_; }

  // fits(), and the buffers execution adds: the scratchpad's data (a slot per write at most) and
  // the outcomes and outputs, on the device and, packed, in pinned memory.
  bool fits_execution(const Batch& b, std::string* why) override {
    if (!fits(b, why)) return false;
    const std::size_t n = b.size();
    std::size_t writes = 0;
    for (std::size_t t = 0; t < n; ++t) writes += b.op_begin[t + 1] - b.op_begin[t] - b.nreads[t];
    std::string err;
    if (!scratch_data_.reserve(writes * std::max<std::size_t>(1, slot_words_), &err) ||
        !res_.reserve(n * (1 + kMaxOut), &err) || !ctl_.reserve(2, &err) ||
        (packed_ && !hdown_.reserve(n * (1 + kMaxOut) * 4, &err))) {
      cudaGetLastError();
      *why = "an epoch of " + std::to_string(n) + " txns does not fit in device memory (" + err + ")";
      return false;
    }
    return true;
  }

  // Reserves every buffer an Epic-CPU epoch of `b` needs before anything changes, then asks for
  // headroom for Thrust's temporaries and L-Slab's growth on inserts (16 bytes per op and 64 MiB).
  bool fits(const Batch& b, std::string* why) override {
    if (!within_max_ops(b, why)) return false;
    const std::size_t n = b.size(), m = b.keys.size();
    std::size_t writes = 0;
    for (std::size_t t = 0; t < n; ++t) writes += b.op_begin[t + 1] - b.op_begin[t] - b.nreads[t];
    std::string err;
    auto fail = [&](const std::string& what) {
      cudaGetLastError();  // an allocation failure is not sticky; clear it for later calls
      *why = "an epoch of " + std::to_string(m) + " ops does not fit in device memory (" + what + ")";
      return false;
    };
    const std::size_t staged = ((m * 8 + 15) & ~std::size_t{15}) + ((m + 15) & ~std::size_t{15}) +
                               (((n + 1) * 4 + 15) & ~std::size_t{15}) + ((n * 2 + 15) & ~std::size_t{15});
    std::size_t sort_bytes = 0, b2 = 0;
    const int mi = static_cast<int>(m);
    if (cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, seg_.p, sseg_.p, pos_.p, spos_.p, mi, 0, 9) != cudaSuccess ||
        cub::DeviceRadixSort::SortKeys(nullptr, b2, ops_.p, sorted_.p, mi, 32, 64) != cudaSuccess)
      return fail("sort sizes");
    sort_bytes = std::max(sort_bytes, b2);
    std::size_t slots = 2;
    while (slots < 2 * writes) slots <<= 1;
    bool ok = (!packed_ || (hup_.reserve(staged, &err) && dup_.reserve(staged, &err))) &&
              op_table_.reserve(m, &err) && isw_.reserve(m, &err) && rid_.reserve(m, &err) && global_.reserve(m, &err) &&
              seg_.reserve(m, &err) && sseg_.reserve(m, &err) && pos_.reserve(m, &err) && spos_.reserve(m, &err) &&
              skey_.reserve(m, &err) && ids_.reserve(m, &err) && bounds_.reserve(4 * dix_.size() + 1, &err) &&
              dedup_key_.reserve(slots, &err) && dedup_first_.reserve(slots, &err) && dedup_slot_.reserve(writes, &err) &&
              dedup_is_first_.reserve(writes, &err) &&
              lops_.reserve(m, &err) && lst_.reserve(m, &err) && lout_.reserve(m, &err) && cub_tmp_.reserve(sort_bytes, &err) &&
              loc_.reserve(m, &err) && copy_.reserve(m, &err) && ops_.reserve(m, &err) && sorted_.reserve(m, &err) &&
              wb_.reserve(m, &err) && wa_.reserve(m, &err) && type_.reserve(m, &err) && is_temp_.reserve(m, &err) &&
              tw_.reserve(m, &err) && hdown_.reserve(13 * m, &err) && (!packed_ || ddown_.reserve(13 * m, &err)) &&
              gc_list_.reserve(writes, &err);
    for (auto& d : dix_)
      if (ok && d->map) ok = d->fresh.reserve(writes, &err);
    if (!ok) return fail(err);
    std::size_t free_bytes = 0, total = 0;
    if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) return fail("cudaMemGetInfo");
    const std::size_t headroom = 16 * m + (std::size_t{64} << 20);
    if (free_bytes < headroom)
      return fail(std::to_string(free_bytes >> 20) + " MiB free, " + std::to_string(headroom >> 20) + " MiB of headroom wanted");
    return true;
  }

  bool lookup(std::uint32_t table, std::uint64_t key, std::uint32_t* rid, std::string* err) override {
    if (!attached_ || table >= dix_.size()) return *err = "GPU planner not attached", false;
    return map_lookup(table, key, rid, err);
  }

  bool read_record(const Database& db, std::uint32_t table, std::uint64_t key, std::vector<std::uint32_t>* rec,
                   bool* found, std::string* err) override {
    *found = false;
    if (table >= tables_.size() || table >= db.num_tables()) return *err = "tables not uploaded", false;
    const TableSpec& spec = db.table(table).spec;
    std::uint32_t r = kInvalid;
    if (!spec.indexed) {
      if (key < spec.capacity) r = static_cast<std::uint32_t>(key);
    } else if (gpu_index_) {
      if (table >= dix_.size()) return *err = "GPU index not uploaded", false;
      if (!map_lookup(table, key, &r, err)) return false;
    } else {
      r = db.lookup(table, key);
    }
    if (r == kInvalid) return true;
    const TableView& t = tables_[table];
    const std::size_t words = t.words;
    std::uint64_t both = 0;
    std::vector<std::uint32_t> two(2 * words);
    if (t.pairs) {  // (data << 32) | slot word, per slot
      std::uint64_t p[2];
      EPIC_CUDA(cudaMemcpy(p, t.pairs + 2 * std::size_t(r), 16, cudaMemcpyDeviceToHost));
      unpair(p, &both, two.data());
    } else {
      EPIC_CUDA(cudaMemcpy(&both, t.slots + r, 8, cudaMemcpyDeviceToHost));
      EPIC_CUDA(cudaMemcpy(two.data(), t.data + 2 * words * r, 8 * words, cudaMemcpyDeviceToHost));
    }
    const int s = committed_slot(both);
    if (s < 0) return true;
    rec->assign(two.begin() + s * words, two.begin() + (s + 1) * words);
    *found = true;
    return true;
  }

 private:
  // The record id `key` maps to in table's index map (kInvalid when absent): one L-Slab GET.
  bool map_lookup(std::uint32_t table, std::uint64_t key, std::uint32_t* rid, std::string* err) {
    const DevIndex& d = *dix_[table];
    *rid = kInvalid;
    if (!d.map || key == lslab::kReservedKey) return true;  // a key the index never holds
    const lslab::Op op = lslab::Op::kGet;
    lslab::OpStatus st = lslab::OpStatus::kNotFound;
    std::uint64_t v = 0;
    lslab::BatchResult res{&st, &v};
    const Status s = d.map->execute(lslab::Batch{&op, &key, nullptr, 1}, res);
    if (!s.ok()) return *err = "L-Slab lookup: " + s.to_string(), false;
    if (st == lslab::OpStatus::kFound) *rid = static_cast<std::uint32_t>(v);
    return true;
  }

  bool index_and_plan_on_device(const Database& db, const Batch& b, DevicePlan* out, std::string* err) {
    if (!attached_ || dix_.size() != db.num_tables()) return *err = "GPU planner not attached", false;
    const std::size_t n = b.size(), m = b.keys.size();
    auto t1 = std::chrono::steady_clock::now();
    if (!put_keys(b, false, err)) return false;
    EPIC_CUDA(cudaDeviceSynchronize());
    out->h2d_ms = ms_since(t1);
    t1 = std::chrono::steady_clock::now();
    if (!device_index(db, n, m, err)) return false;  // ends synchronised
    out->index_ms = ms_since(t1);
    t1 = std::chrono::steady_clock::now();
    if (!plan_device(n, m, err)) return false;
    EPIC_CUDA(cudaDeviceSynchronize());
    out->plan_ms = ms_since(t1);
    t1 = std::chrono::steady_clock::now();
    // rid, loc, copy (4 bytes per op each) and the op's table (1 byte) gather on the device and
    // come back in one copy; the host executes straight from the pinned buffer.
    const std::size_t m4 = m * 4, bytes = 3 * m4 + m;
    if (!hdown_.reserve(bytes, err)) return false;
    if (packed_) {
      if (!ddown_.reserve(bytes, err)) return false;
      if (m) {
        EPIC_CUDA(cudaMemcpyAsync(ddown_.p, rid_.p, m4, cudaMemcpyDeviceToDevice, 0));
        EPIC_CUDA(cudaMemcpyAsync(ddown_.p + m4, loc_.p, m4, cudaMemcpyDeviceToDevice, 0));
        EPIC_CUDA(cudaMemcpyAsync(ddown_.p + 2 * m4, copy_.p, m4, cudaMemcpyDeviceToDevice, 0));
        EPIC_CUDA(cudaMemcpyAsync(ddown_.p + 3 * m4, op_table_.p, m, cudaMemcpyDeviceToDevice, 0));
        EPIC_CUDA(cudaMemcpyAsync(hdown_.p, ddown_.p, bytes, cudaMemcpyDeviceToHost, 0));
      }
    } else if (m) {
      EPIC_CUDA(cudaMemcpyAsync(hdown_.p, rid_.p, m4, cudaMemcpyDeviceToHost, 0));
      EPIC_CUDA(cudaMemcpyAsync(hdown_.p + m4, loc_.p, m4, cudaMemcpyDeviceToHost, 0));
      EPIC_CUDA(cudaMemcpyAsync(hdown_.p + 2 * m4, copy_.p, m4, cudaMemcpyDeviceToHost, 0));
      EPIC_CUDA(cudaMemcpyAsync(hdown_.p + 3 * m4, op_table_.p, m, cudaMemcpyDeviceToHost, 0));
    }
    EPIC_CUDA(cudaDeviceSynchronize());
    out->d2h_ms = ms_since(t1);
    out->rid = reinterpret_cast<const std::uint32_t*>(hdown_.p);
    out->loc = reinterpret_cast<const std::uint32_t*>(hdown_.p + m4);
    out->copy = reinterpret_cast<const std::uint32_t*>(hdown_.p + 2 * m4);
    out->table = hdown_.p + 3 * m4;
    out->temp_count = temp_count_;
    return true;
  }


 public:
  bool release(const Database& db, const std::vector<std::vector<std::uint32_t>>& freed, std::string* err) override {
    if (!attached_ || dix_.size() != db.num_tables()) return *err = "GPU planner not attached", false;
    for (std::uint32_t tb = 0; tb < dix_.size() && tb < freed.size(); ++tb) {
      DevIndex& d = *dix_[tb];
      const std::size_t f = freed[tb].size();
      if (!d.map || f == 0) continue;
      if (f > d.cap - d.count) return *err = "table " + db.table(tb).spec.name + ": more ids freed than in use", false;
      if (!gc_list_.put(freed[tb].data(), f, err) || !kbuf_.reserve(f, err)) return false;
      const std::uint32_t tail = static_cast<std::uint32_t>((static_cast<std::size_t>(d.head) + d.count) % d.cap);
      free_kernel<<<blocks_for(f, 256), 256>>>(gc_list_.p, f, nullptr, d.ring.p, d.cap, tail, d.backlink.p, kbuf_.p);
      EPIC_CUDA(cudaGetLastError());
      if (!lslab_run(*d.map, lslab::Op::kDelete, kbuf_.p, nullptr, f, err)) return false;
      d.count += static_cast<std::uint32_t>(f);
    }
    EPIC_CUDA(cudaDeviceSynchronize());
    return true;
  }

  bool sync(Database& db, std::string* err) override {
    if (!attached_ || dix_.size() != db.num_tables()) return *err = "GPU planner not attached", false;
    return download_index(db, err);
  }

  std::uint64_t watchdog_cycles_ = 0;
  Faults faults_;

 private:
  // With DUET_EPIC_EXEC_TIMES=1 in the environment, each GPU execution stamps every txn (start,
  // reads gathered, first write published, end; globaltimer ns) and prints per procedure id to
  // stderr the mean wait for its reads, the mean time from then to its first published write,
  // and, over consecutive txns of that procedure in serial order, the mean gap between their
  // first published writes and between the previous one's and this one's reads gathered (on a
  // chain through one record: the link time and the time a waiter takes to see its version).
  // A diagnostic: the stamps cost time.
  bool exec_times_on_ = std::getenv("DUET_EPIC_EXEC_TIMES") != nullptr;
  bool any_paired_ = false;  ///< some table is one word wide (TableView::pairs)
  int exec_smem_ = std::getenv("DUET_EPIC_EXEC_SMEM") ? std::atoi(std::getenv("DUET_EPIC_EXEC_SMEM")) : 0;
  DevBuf<std::uint64_t> exec_times_;
  bool print_exec_times(const Batch& b, std::string* err) {
    const std::size_t n = b.size();
    std::vector<std::uint64_t> ts(n * 4);
    if (!exec_times_.get(ts.data(), n * 4, err)) return false;
    EPIC_CUDA(cudaDeviceSynchronize());
    struct Sum { std::size_t count = 0, published = 0, links = 0; double wait = 0, to_publish = 0, link = 0, seen = 0; };
    std::vector<Sum> sums;
    std::vector<std::size_t> last(256, SIZE_MAX);
    std::uint64_t lo = ~0ull, hi = 0;
    for (std::size_t t = 0; t < n; ++t) {
      const std::uint64_t* s = &ts[t * 4];
      const std::uint32_t p = b.proc[t] & 0xFF;
      if (sums.size() <= p) sums.resize(p + 1);
      Sum& u = sums[p];
      ++u.count;
      u.wait += double(s[1] - s[0]);
      lo = std::min(lo, s[0]), hi = std::max(hi, s[3]);
      if (!s[2]) continue;
      ++u.published;
      u.to_publish += double(s[2] - s[1]);
      if (last[p] != SIZE_MAX) {
        const std::uint64_t* q = &ts[last[p] * 4];
        ++u.links;
        u.link += double(s[2]) - double(q[2]);
        u.seen += double(s[1]) - double(q[2]);
      }
      last[p] = t;
    }
    std::fprintf(stderr, "epic exec times (%zu txns, kernel span %.3f ms):", n, double(hi - lo) / 1e6);
    for (std::size_t p = 0; p < sums.size(); ++p) {
      const Sum& u = sums[p];
      if (!u.count) continue;
      std::fprintf(stderr, " | proc %zu: %zu txns, wait %.2f us, to first write %.2f us, link %.2f us, seen %.2f us", p,
                   u.count, u.wait / u.count / 1e3, u.published ? u.to_publish / u.published / 1e3 : 0.0,
                   u.links ? u.link / u.links / 1e3 : 0.0, u.links ? u.seen / u.links / 1e3 : 0.0);
    }
    std::fprintf(stderr, "\n");
    return true;
  }

  unsigned max_backoff_ns_ = 1024;
  bool gather_reads_ = true;
  std::uint32_t last_eid_ = 0;  ///< the eid of the last epoch run (scratch words older than it are stale)
  bool state_changed_ = false;  ///< the last run_epoch changed the index or the tables (see last_epoch_untouched)
  // ---- Transfers. Kernels read the epoch's inputs through the d_* pointers: into the device
  // staging buffer (packed mode, one copy from one pinned buffer) or into per-array buffers (the
  // per-array mode: a pageable copy per array and Key structs as they are, kept for A/B runs).
  const std::uint64_t* d_key_ = nullptr;
  const std::uint8_t* d_ktable_ = nullptr;
  const std::uint32_t *d_op_begin_ = nullptr, *d_proc_ = nullptr, *d_arg_begin_ = nullptr, *d_args_ = nullptr,
                      *d_attempt_ = nullptr;
  const std::uint16_t* d_nreads_ = nullptr;
  bool packed_ = true;
  double pack_ms_ = 0;  ///< the last put_keys' host packing time
  int host_threads_ = static_cast<int>(std::min(16u, std::max(1u, std::thread::hardware_concurrency())));
  PinnedBuf hup_, hdown_;
  DevBuf<unsigned char> dup_, ddown_;
  DevBuf<std::uint64_t> kkey_;
  DevBuf<std::uint8_t> ktable_;

  bool put_plan_inputs(const Batch& b, const std::vector<std::uint32_t>& global, std::string* err) {
    if (!(global_.put(global.data(), global.size(), err) && op_begin_.put(b.op_begin.data(), b.size() + 1, err) &&
          nreads_.put(b.nreads.data(), b.size(), err)))
      return false;
    d_op_begin_ = op_begin_.p, d_nreads_ = nreads_.p;
    return true;
  }
  bool put_exec_inputs(const Batch& b, std::string* err) {
    const std::size_t n = b.size();
    if (!(proc_.put(b.proc.data(), n, err) && arg_begin_.put(b.arg_begin.data(), n + 1, err) &&
          args_.put(b.args.data(), b.args.size(), err) && attempt_.put(b.attempt.data(), n, err)))
      return false;
    d_proc_ = proc_.p, d_arg_begin_ = arg_begin_.p, d_args_ = args_.p, d_attempt_ = attempt_.p;
    return true;
  }
  // The keys for device indexing with sizes (and, with `exec`, the execution inputs). Packed: per
  // op an 8-byte key and a 1-byte table, then op_begin, nreads (and proc, arg_begin, args,
  // attempt), each section 16-byte aligned, written into one pinned buffer (on up to 16 host
  // threads) and sent with one copy. Per-array: each array with its own pageable copy, the keys as
  // 16-byte Key structs split on the device. Asynchronous: the caller synchronises.
  bool put_keys(const Batch& b, bool exec, std::string* err) {
    const std::size_t n = b.size(), m = b.keys.size(), na = b.args.size();
    if (!packed_) {
      if (!keys_.put(b.keys.data(), m, err) || !op_begin_.put(b.op_begin.data(), n + 1, err) ||
          !nreads_.put(b.nreads.data(), n, err) || !kkey_.reserve(m, err) || !ktable_.reserve(m, err))
        return false;
      if (exec && !put_exec_inputs(b, err)) return false;
      if (m) {
        split_keys_kernel<<<blocks_for(m, 256), 256>>>(keys_.p, m, kkey_.p, ktable_.p);
        EPIC_CUDA(cudaGetLastError());
      }
      d_key_ = kkey_.p, d_ktable_ = ktable_.p, d_op_begin_ = op_begin_.p, d_nreads_ = nreads_.p;
      return true;
    }
    std::size_t size = 0;
    auto take = [&size](std::size_t bytes) {
      const std::size_t o = size;
      size += (bytes + 15) & ~std::size_t{15};
      return o;
    };
    const std::size_t o_key = take(m * 8), o_tab = take(m), o_ob = take((n + 1) * 4), o_nr = take(n * 2);
    std::size_t o_proc = 0, o_ab = 0, o_args = 0, o_att = 0;
    if (exec) o_proc = take(n * 4), o_ab = take((n + 1) * 4), o_args = take(na * 4), o_att = take(n * 4);
    const auto t_pack = std::chrono::steady_clock::now();
    if (!hup_.reserve(size, err) || !dup_.reserve(size, err)) return false;
    unsigned char* h = hup_.p;
    auto* hk = reinterpret_cast<std::uint64_t*>(h + o_key);
    std::uint8_t* ht = h + o_tab;
    const Key* keys = b.keys.data();
    // Every section is packed in parts on the engine's persistent workers: part p splits the keys
    // and each copied array alike (the args alone are 8 MB per 100K YCSB-A txns; copied on one
    // thread after the keys they took most of the packing time, measured on the H200 machine).
    struct Section {
      std::size_t at;
      const void* src;
      std::size_t bytes;
    };
    std::vector<Section> sections = {{o_ob, b.op_begin.data(), (n + 1) * 4}, {o_nr, b.nreads.data(), n * 2}};
    if (exec)
      sections.insert(sections.end(), {{o_proc, b.proc.data(), n * 4}, {o_att, b.attempt.data(), n * 4},
                                       {o_ab, b.arg_begin.data(), (n + 1) * 4}, {o_args, b.args.data(), na * 4}});
    const std::size_t total = m * sizeof(Key) + na * 4;
    const std::size_t parts = host_threads_ > 1 && total >= (std::size_t{1} << 20) ? 2 * static_cast<std::size_t>(host_threads_) : 1;
    thread_pool(host_threads_ - 1).run(parts, [&](std::size_t p) {
      for (std::size_t i = m * p / parts, e = m * (p + 1) / parts; i < e; ++i) {
        hk[i] = keys[i].key;
        ht[i] = static_cast<std::uint8_t>(keys[i].table);
      }
      for (const Section& s : sections) {
        const std::size_t lo = s.bytes * p / parts, hi = s.bytes * (p + 1) / parts;
        if (hi > lo) std::memcpy(h + s.at + lo, static_cast<const unsigned char*>(s.src) + lo, hi - lo);
      }
    });
    pack_ms_ = ms_since(t_pack);
    EPIC_CUDA(cudaMemcpyAsync(dup_.p, h, size, cudaMemcpyHostToDevice, 0));
    unsigned char* d = dup_.p;
    d_key_ = reinterpret_cast<const std::uint64_t*>(d + o_key);
    d_ktable_ = d + o_tab;
    d_op_begin_ = reinterpret_cast<const std::uint32_t*>(d + o_ob);
    d_nreads_ = reinterpret_cast<const std::uint16_t*>(d + o_nr);
    if (exec) {
      d_proc_ = reinterpret_cast<const std::uint32_t*>(d + o_proc);
      d_arg_begin_ = reinterpret_cast<const std::uint32_t*>(d + o_ab);
      d_args_ = reinterpret_cast<const std::uint32_t*>(d + o_args);
      d_attempt_ = reinterpret_cast<const std::uint32_t*>(d + o_att);
    }
    return true;
  }

  // ---- GPU indexing state: per indexed table one L-Slab map (key -> id), the free ring as a
  // circular array (ids [head, head + count) in FIFO order) and the back-links (id -> key).
  struct DevIndex {
    std::unique_ptr<lslab::Map> map;
    DevBuf<std::uint32_t> ring;
    DevBuf<std::uint64_t> backlink;
    DevBuf<std::uint64_t> fresh;  ///< this epoch's new keys, in first-occurrence order
    std::uint32_t cap = 0, head = 0, count = 0;
    std::size_t fresh_n = 0;
  };

  bool upload_index(const Database& db, std::string* err) {
    dix_.clear();
    std::vector<TableMeta> meta(db.num_tables());
    for (std::uint32_t i = 0; i < db.num_tables(); ++i) {
      const TableStore& t = db.table(i);
      meta[i] = TableMeta{t.base, t.spec.capacity, t.spec.indexed ? 1u : 0u};
      auto d = std::make_unique<DevIndex>();
      if (t.spec.indexed && t.spec.capacity) {
        d->cap = t.spec.capacity;
        lslab::Config cfg;
        cfg.expected_keys = std::max<std::uint64_t>(t.spec.capacity, 1024);
        Status s = lslab::make_gpu_map(cfg, &d->map);
        if (!s.ok()) return *err = "L-Slab map for table " + t.spec.name + ": " + s.to_string(), false;
        const std::vector<std::uint32_t> ring(t.free_ring.begin(), t.free_ring.end());
        if (!d->ring.reserve(d->cap, err) || !d->ring.put(ring.data(), ring.size(), err) ||
            !d->backlink.put(t.backlink.data(), t.backlink.size(), err))
          return false;
        d->head = 0;
        d->count = static_cast<std::uint32_t>(ring.size());
        std::vector<std::uint64_t> keys, vals;
        keys.reserve(t.index.size());
        vals.reserve(t.index.size());
        for (const auto& [k, r] : t.index) {
          if (k == lslab::kReservedKey) return *err = "table " + t.spec.name + ": key 2^64-1 cannot be GPU-indexed", false;
          keys.push_back(k);
          vals.push_back(r);
        }
        std::vector<lslab::Op> ops(keys.size(), lslab::Op::kPut);
        std::vector<lslab::OpStatus> st(keys.size());
        std::vector<std::uint64_t> prev(keys.size());
        lslab::BatchResult res{st.data(), prev.data()};
        s = d->map->execute(lslab::Batch{ops.data(), keys.data(), vals.data(), keys.size()}, res);
        if (!s.ok()) return *err = "L-Slab load of table " + t.spec.name + ": " + s.to_string(), false;
      }
      dix_.push_back(std::move(d));
    }
    return meta_.put(meta.data(), meta.size(), err);
  }

  bool download_index(Database& db, std::string* err) {
    EPIC_CUDA(cudaDeviceSynchronize());
    for (std::uint32_t i = 0; i < db.num_tables() && i < dix_.size(); ++i) {
      TableStore& t = db.table(i);
      DevIndex& d = *dix_[i];
      if (!d.map) continue;
      std::vector<std::uint32_t> ring(d.cap);
      if (!d.ring.get(ring.data(), d.cap, err) || !d.backlink.get(t.backlink.data(), d.cap, err)) return false;
      EPIC_CUDA(cudaDeviceSynchronize());
      t.free_ring.clear();
      for (std::uint32_t j = 0; j < d.count; ++j) t.free_ring.push_back(ring[(static_cast<std::size_t>(d.head) + j) % d.cap]);
      std::vector<std::uint64_t> keys, vals;
      Status s = d.map->export_entries(&keys, &vals);
      if (!s.ok()) return *err = "L-Slab export of table " + t.spec.name + ": " + s.to_string(), false;
      t.index.clear();
      for (std::size_t j = 0; j < keys.size(); ++j) t.index.emplace(keys[j], static_cast<std::uint32_t>(vals[j]));
    }
    return true;
  }

  // One L-Slab batch of n requests `op` over device keys (and values for kPut); outcomes land in
  // lst_ / lout_.
  bool lslab_run(lslab::Map& map, lslab::Op op, const std::uint64_t* keys, const std::uint64_t* vals, std::size_t n,
                 std::string* err) {
    if (n == 0) return true;
    if (!lops_.reserve(n, err) || !lst_.reserve(n, err) || !lout_.reserve(n, err)) return false;
    fill_ops_kernel<<<blocks_for(n, 256), 256>>>(lops_.p, n, op);
    EPIC_CUDA(cudaGetLastError());
    EPIC_CUDA(cudaDeviceSynchronize());  // the map runs on its own stream
    lslab::BatchResult r{lst_.p, lout_.p};
    const Status s = map.execute_resident(lslab::Batch{lops_.p, keys, vals, n}, r);
    if (!s.ok()) return *err = "L-Slab: " + s.to_string(), false;
    return true;
  }

  // With DUET_EPIC_INDEX_TIMES=1 in the environment, device_index synchronises after each step
  // and prints the steps' milliseconds per epoch to stderr (a diagnostic: the syncs cost time).
  struct IndexTimes {
    bool on = std::getenv("DUET_EPIC_INDEX_TIMES") != nullptr;
    std::chrono::steady_clock::time_point last;
    static constexpr int kSteps = 7;
    double ms[kSteps] = {};
    static constexpr const char* kNames[kSteps] = {"prep", "group", "get-writes", "dedup", "assign", "put", "lookup"};
    void start() {
      if (on) cudaDeviceSynchronize(), last = std::chrono::steady_clock::now(), std::fill(ms, ms + kSteps, 0.0);
    }
    void mark(int step) {
      if (!on) return;
      cudaDeviceSynchronize();
      const auto now = std::chrono::steady_clock::now();
      ms[step] += std::chrono::duration<double, std::milli>(now - last).count();
      last = now;
    }
    void print(std::size_t m) const {
      if (!on) return;
      std::fprintf(stderr, "epic index ms (%zu ops):", m);
      for (int i = 0; i < kSteps; ++i) std::fprintf(stderr, " %s %.3f", kNames[i], ms[i]);
      std::fprintf(stderr, "\n");
    }
    // One table's insert step: its keys, milliseconds and the map's slab pool afterwards.
    void print_put(const std::string& table, std::size_t keys, double put_ms, const lslab::PoolStats& p) const {
      std::fprintf(stderr,
                   "epic index put %s: %zu keys %.3f ms; buckets %llu, pool %llu slabs, handed out %llu, free %llu, "
                   "grows %llu\n",
                   table.c_str(), keys, put_ms, static_cast<unsigned long long>(p.buckets),
                   static_cast<unsigned long long>(p.pool_capacity), static_cast<unsigned long long>(p.pool_handed_out),
                   static_cast<unsigned long long>(p.pool_free), static_cast<unsigned long long>(p.pool_grows));
    }
  };
  IndexTimes itimes_;

  // Insert-first indexing over keys_/op_begin_/nreads_ on the device; fills op_table_, rid_ and
  // global_. Every table is checked for room before any key is inserted. One stable sort by
  // segment groups each indexed table's writes and reads (in op order), so the host learns every
  // table's slice in one copy; each table then costs its L-Slab batches and one compaction.
  bool device_index(const Database& db, std::size_t n, std::size_t m, std::string* err) {
    const auto ntables = static_cast<std::uint32_t>(dix_.size());
    const std::uint32_t nseg = 2 * ntables;  // segments 0..nseg-1; nseg marks the unindexed ops
    if (!op_table_.reserve(m, err) || !isw_.reserve(m, err) || !rid_.reserve(m, err) || !global_.reserve(m, err) ||
        !seg_.reserve(m, err) || !sseg_.reserve(m, err) || !pos_.reserve(m, err) || !spos_.reserve(m, err) ||
        !skey_.reserve(m, err) || !ids_.reserve(m, err) || !bounds_.reserve(2 * nseg + 1, err))
      return false;
    if (m == 0) return true;
    IndexTimes& it = itimes_;
    it.start();
    EPIC_CUDA(cudaMemsetAsync(bounds_.p, 0, (2 * nseg + 1) * sizeof(std::uint32_t)));
    const bool any_indexed = std::any_of(dix_.begin(), dix_.end(), [](const auto& d) { return d->map != nullptr; });
    prep_kernel<<<blocks_for_warps(n), 32 * kWarpsPerBlock>>>(
        d_key_, d_ktable_, d_op_begin_, d_nreads_, static_cast<std::uint32_t>(n), meta_.p, ntables, op_table_.p, isw_.p,
        rid_.p, global_.p, any_indexed ? seg_.p : nullptr, pos_.p, bounds_.p + 2 * nseg);
    EPIC_CUDA(cudaGetLastError());
    it.mark(0);
    if (!any_indexed) {  // direct tables only: prep did all there is
      EPIC_CUDA(cudaDeviceSynchronize());
      it.print(m);
      return true;
    }
    int end_bit = 1;
    while ((1u << end_bit) <= nseg) ++end_bit;
    std::size_t bytes = 0;
    const int mi = static_cast<int>(m);
    EPIC_CUDA(cub::DeviceRadixSort::SortPairs(nullptr, bytes, seg_.p, sseg_.p, pos_.p, spos_.p, mi, 0, end_bit));
    if (!cub_tmp_.reserve(bytes, err)) return false;
    EPIC_CUDA(cub::DeviceRadixSort::SortPairs(cub_tmp_.p, bytes, seg_.p, sseg_.p, pos_.p, spos_.p, mi, 0, end_bit));
    segment_bounds_kernel<<<blocks_for(m, 256), 256>>>(sseg_.p, spos_.p, d_key_, m, nseg, bounds_.p, bounds_.p + nseg,
                                                       skey_.p);
    EPIC_CUDA(cudaGetLastError());
    std::vector<std::uint32_t> bounds(2 * nseg + 1);
    EPIC_CUDA(cudaMemcpy(bounds.data(), bounds_.p, bounds.size() * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
    const std::uint32_t* start = bounds.data();
    const std::uint32_t* end = bounds.data() + nseg;
    const std::uint32_t bad_table = bounds[2 * nseg] ? ntables - bounds[2 * nseg] : ntables;
    it.mark(1);
    // 1. Per indexed table: the missing write keys, deduplicated, in first-occurrence order.
    for (std::uint32_t tb = 0; tb < ntables; ++tb) {
      DevIndex& d = *dix_[tb];
      d.fresh_n = 0;
      if (!d.map) continue;
      if (tb == bad_table)
        return *err = "table " + db.table(tb).spec.name + ": write key 2^64-1 cannot be GPU-indexed", false;
      const std::size_t ns = end[2 * tb] - start[2 * tb];
      if (ns == 0) continue;
      const std::uint64_t* keys = skey_.p + start[2 * tb];
      if (!lslab_run(*d.map, lslab::Op::kGet, keys, nullptr, ns, err)) return false;
      it.mark(2);
      std::uint64_t slots = 2;
      while (slots < 2 * ns) slots <<= 1;
      if (!dedup_key_.reserve(slots, err) || !dedup_first_.reserve(slots, err) || !dedup_slot_.reserve(ns, err) ||
          !dedup_is_first_.reserve(ns, err) || !d.fresh.reserve(ns, err))
        return false;
      EPIC_CUDA(cudaMemsetAsync(dedup_key_.p, 0xff, slots * sizeof(std::uint64_t)));
      EPIC_CUDA(cudaMemsetAsync(dedup_first_.p, 0xff, slots * sizeof(std::uint32_t)));
      dedup_insert_kernel<<<blocks_for(ns, 256), 256>>>(keys, lst_.p, ns, dedup_key_.p, dedup_first_.p, slots - 1,
                                                        dedup_slot_.p);
      EPIC_CUDA(cudaGetLastError());
      dedup_mark_kernel<<<blocks_for(ns, 256), 256>>>(dedup_slot_.p, dedup_first_.p, ns, dedup_is_first_.p);
      EPIC_CUDA(cudaGetLastError());
      const std::size_t u =
          thrust::copy_if(thrust::device, keys, keys + ns, dedup_is_first_.p, d.fresh.p, NonZero{}) - d.fresh.p;
      if (u > d.count) return *err = "table " + db.table(tb).spec.name + " is full", false;
      d.fresh_n = u;
      it.mark(3);
    }
    // 2. Ids from the ring's head, back-links, inserts.
    state_changed_ = true;
    for (std::uint32_t tb = 0; tb < ntables; ++tb) {
      DevIndex& d = *dix_[tb];
      if (!d.map || d.fresh_n == 0) continue;
      assign_kernel<<<blocks_for(d.fresh_n, 256), 256>>>(d.fresh.p, d.fresh_n, d.ring.p, d.cap, d.head, d.backlink.p,
                                                         ids_.p);
      EPIC_CUDA(cudaGetLastError());
      it.mark(4);
      if (!lslab_run(*d.map, lslab::Op::kPut, d.fresh.p, ids_.p, d.fresh_n, err)) return false;
      const double before = it.ms[5];
      it.mark(5);
      if (it.on) it.print_put(db.table(tb).spec.name, d.fresh_n, it.ms[5] - before, d.map->stats());
      d.head = static_cast<std::uint32_t>((static_cast<std::size_t>(d.head) + d.fresh_n) % d.cap);
      d.count -= static_cast<std::uint32_t>(d.fresh_n);
    }
    // 3. Every key of an indexed table (its writes' and reads' segments, adjacent in the sorted
    // order) looked up; a missing one (a read) gets kInvalid.
    for (std::uint32_t tb = 0; tb < ntables; ++tb) {
      DevIndex& d = *dix_[tb];
      if (!d.map) continue;
      const std::size_t nw = end[2 * tb] - start[2 * tb], nr = end[2 * tb + 1] - start[2 * tb + 1];
      const std::size_t lo = nw ? start[2 * tb] : start[2 * tb + 1];
      if (nw + nr == 0) continue;
      if (!lslab_run(*d.map, lslab::Op::kGet, skey_.p + lo, nullptr, nw + nr, err)) return false;
      lookup_scatter_kernel<<<blocks_for(nw + nr, 256), 256>>>(spos_.p + lo, nw + nr, lst_.p, lout_.p,
                                                               db.table(tb).base, rid_.p, global_.p);
      EPIC_CUDA(cudaGetLastError());
    }
    EPIC_CUDA(cudaDeviceSynchronize());
    it.mark(6);
    it.print(m);
    return true;
  }

  // End of epoch with GPU indexing: records whose deleted bit is set are freed in id order (a
  // stable compaction), their ids appended to the ring, their keys deleted through the back-link.
  bool device_free(const Database& db, std::string* err) {
    const thrust::counting_iterator<std::uint32_t> zero(0);
    for (std::uint32_t tb = 0; tb < dix_.size(); ++tb) {
      DevIndex& d = *dix_[tb];
      if (!d.map) continue;
      if (!gc_list_.reserve(d.cap, err) || !kbuf_.reserve(d.cap, err)) return false;
      const std::size_t f =
          thrust::copy_if(thrust::device, zero, zero + d.cap, thrust::device_pointer_cast(tables_[tb].deleted),
                          gc_list_.p, NonZero{}) - gc_list_.p;
      if (f == 0) continue;
      const std::uint32_t tail = static_cast<std::uint32_t>((static_cast<std::size_t>(d.head) + d.count) % d.cap);
      free_kernel<<<blocks_for(f, 256), 256>>>(gc_list_.p, f, tables_[tb].deleted, d.ring.p, d.cap, tail,
                                               d.backlink.p, kbuf_.p);
      EPIC_CUDA(cudaGetLastError());
      if (!lslab_run(*d.map, lslab::Op::kDelete, kbuf_.p, nullptr, f, err)) return false;
      d.count += static_cast<std::uint32_t>(f);
    }
    (void)db;
    return true;
  }
  // Alg. 2-4 over the uploaded inputs; leaves loc_/copy_ on the device and temp_count_ set.
  bool plan_device(std::size_t n, std::size_t m, std::string* err) {
    temp_count_ = 0;
    if (!loc_.reserve(m, err) || !copy_.reserve(m, err)) return false;
    if (m == 0) return true;
    if (!ops_.reserve(m, err) || !sorted_.reserve(m, err) || !wb_.reserve(m, err) || !wa_.reserve(m, err) ||
        !type_.reserve(m, err) || !is_temp_.reserve(m, err) || !tw_.reserve(m, err))
      return false;
    pack_kernel<<<blocks_for_warps(n), 32 * kWarpsPerBlock>>>(global_.p, d_op_begin_, d_nreads_, static_cast<std::uint32_t>(n), ops_.p);
    EPIC_CUDA(cudaGetLastError());
    std::size_t bytes = 0;
    EPIC_CUDA(cub::DeviceRadixSort::SortKeys(nullptr, bytes, ops_.p, sorted_.p, static_cast<int>(m), 32, 64));
    if (!cub_tmp_.reserve(bytes, err)) return false;
    EPIC_CUDA(cub::DeviceRadixSort::SortKeys(cub_tmp_.p, bytes, ops_.p, sorted_.p, static_cast<int>(m), 32, 64));
    auto rec = thrust::make_transform_iterator(sorted_.p, RecordOf{});
    auto wr = thrust::make_transform_iterator(sorted_.p, WriteOf{});
    thrust::exclusive_scan_by_key(thrust::device, rec, rec + m, wr, wb_.p);
    auto rrec = thrust::make_reverse_iterator(rec + m);
    auto rwr = thrust::make_reverse_iterator(wr + m);
    thrust::exclusive_scan_by_key(thrust::device, rrec, rrec + m, rwr, thrust::make_reverse_iterator(wa_.p + m));
    classify_kernel<<<blocks_for(m, 256), 256>>>(sorted_.p, wb_.p, wa_.p, m, type_.p, is_temp_.p);
    EPIC_CUDA(cudaGetLastError());
    thrust::exclusive_scan(thrust::device, is_temp_.p, is_temp_.p + m, tw_.p);
    scatter_kernel<<<blocks_for(m, 256), 256>>>(sorted_.p, wb_.p, type_.p, tw_.p, d_op_begin_, m, loc_.p, copy_.p);
    EPIC_CUDA(cudaGetLastError());
    std::uint32_t last_tw = 0, last_temp = 0;
    EPIC_CUDA(cudaMemcpy(&last_tw, tw_.p + m - 1, 4, cudaMemcpyDeviceToHost));
    EPIC_CUDA(cudaMemcpy(&last_temp, is_temp_.p + m - 1, 4, cudaMemcpyDeviceToHost));
    temp_count_ = last_tw + last_temp;
    return true;
  }

  IndexOn index_on_ = IndexOn::kGpu;
  bool attached_ = false;  ///< attach() holds the index (Epic-CPU); upload() takes it back
  bool gpu_index_ = false;  ///< the mode of the last upload()
  std::vector<std::unique_ptr<DevIndex>> dix_;
  DevBuf<TableMeta> meta_;
  DevBuf<Key> keys_;
  DevBuf<std::uint8_t> isw_;
  // device_index: ops' segments and positions, both sorted by segment, the keys in that order,
  // the segment bounds (+ the reserved-key word), and the deduplication's probe table.
  DevBuf<std::uint16_t> seg_, sseg_;
  DevBuf<std::uint32_t> pos_, spos_, bounds_, dedup_first_, dedup_slot_;
  DevBuf<std::uint8_t> dedup_is_first_;
  DevBuf<std::uint64_t> kbuf_, skey_, dedup_key_, ids_, lout_;
  DevBuf<lslab::Op> lops_;
  DevBuf<lslab::OpStatus> lst_;
  Indexed host_ix_;
  std::vector<TableView> tables_;
  DevBuf<TableView> dtables_;
  std::uint32_t slot_words_ = 0, temp_count_ = 0;
  DevBuf<std::uint32_t> global_, op_begin_, proc_, arg_begin_, args_, attempt_, rid_, loc_, copy_;
  DevBuf<std::uint16_t> nreads_;
  DevBuf<std::uint8_t> op_table_, type_, cub_tmp_;
  DevBuf<std::uint64_t> ops_, sorted_;
  DevBuf<std::uint32_t> wb_, wa_, is_temp_, tw_, scratch_word_, scratch_data_, res_, ctl_, gc_list_;
};

}  // namespace

bool gpu_available(std::string* why) {
  const gpu::DeviceInfo& d = gpu::device();  // honours DUET_NO_GPU, as the rest of Duet does
  if (!d.present && why) *why = d.reason;
  return d.present;
}

std::string gpu_name() { return gpu_available(nullptr) ? gpu::device().name : "cpu"; }

std::unique_ptr<GpuRunner> make_gpu_runner(ProcSet set, std::string* err) {
  if (!gpu_available(err)) return nullptr;
  auto make = [](auto x) -> std::unique_ptr<GpuRunner> {
    x->watchdog_cycles_ = 20000000000ull;  // about 10 s
    return x;
  };
  if (set == ProcSet::kMix) return make(std::make_unique<Runner<MixProcs>>());
  if (set == ProcSet::kTpcc) return make(std::make_unique<Runner<TpccProcs>>());
  return make(std::make_unique<Runner<YcsbProcs>>());
}

}  // namespace duet::batch::epic
