// LIT on the GPU (dissertation 6.4), batched. See gpu_lit.hpp for the contract.
//
// Layout.
//  * Root level: one 64-bit bucket word per bucket, the bucket's boundary marker and its vCAS
//    object. Bits 0-31: index of the bucket's newest head node (kNull: never written, empty);
//    32-37: that node's pair count; 38-61: low 24 bits of the head's timestamp; 63: lock.
//    The lookup function is f(k) = clamp((k - predicted_min) / bucket_width, 0, buckets - 1),
//    monotone, so bucket b's keys are all below bucket b+1's and a range walks buckets in order
//    (walking the root in index order stands in for the seed's link from a bucket's last node
//    to the next marker: the root never changes, so both reach the same nodes).
//  * Data nodes (576 bytes, 64-byte aligned): 32 unsorted keys, 32 values, then a header of
//    meta (count | next node's count << 8 | next index << 32), ts (the batch epoch that made
//    it) and older (the head this node replaced, when it was made as a head). A bucket is a
//    chain of nodes ordered between nodes (max(A) < min(B) for A -> B), read by a warp with
//    lane i holding pair i (coalesced). Nodes are immutable once published: every update is
//    copy-on-write of the bucket's chain up to the node it changes (path copy; the untouched
//    tail is shared), and the new head carries the version label (ts, older). So the whole
//    bucket has one vCAS object, its word, and the version list of that object is the chain
//    of heads through `older`.
//
// Versioning. The camera is the batch epoch e (the map's count of batches): every head made
// in batch e has ts = e. Range queries of batch e read snapshot s = e - 1: a bucket's version
// at s is the first head on the `older` list with ts <= s (the word's ts bits short-cut the
// common case of a head older than e without reading the node). A head made in batch e links
// straight to the newest head made before e, skipping the heads e made and replaced, so that
// walk is one step however often the batch rewrote the bucket.
//
// Batches. A batch's valid updates are first sorted by bucket (stable) and applied by
// update_kernel: the warp whose 32 sorted entries hold the start of a bucket's run owns the
// whole run, and applies it 32 updates at a time in batch order: lock once, update the node in
// registers, publish one new node (when the bucket is a single node that stays within 32
// pairs; otherwise the requests go one by one through the per-request INSERT / REMOVE /
// UPSERT below). A hot bucket is then rewritten once per 32 of its updates, with no other warp
// waiting on its lock (Zipfian keys). GETs and range counts run next in batch_kernel, range
// fills last.
//
// Operations (one warp per request, the warp's 32 requests in turn; lane 0 does the vCAS
// loads, CAS and stores and broadcasts, as Algorithms 31 and 32):
//  * GET: load the word (acquire), then the head node's pairs (count from the word, so keys
//    and values come in one round), following `next` while the key is above the node's max.
//    Lock-free; it ignores the lock bit.
//  * INSERT / REMOVE / UPSERT: lock the bucket (CAS of the lock bit into the word: the
//    vCAS-aware lock, at bucket grain rather than the seed's prev + curr pair), walk the
//    chain, and when something changes write the new nodes (a full node splits into two of 17
//    and 16 pairs; a node left empty drops out; an empty bucket keeps an empty head so its
//    version list goes on), then store the new word, which publishes and unlocks at once.
//  * RANGE [a, b]: for each bucket from f(a) to f(b) find its version at s, walk that chain,
//    and count (first pass) or write (second pass) the pairs in [a, b]; the lanes rank their
//    in-range keys so the output is sorted. Wait-free: the walk is bounded by the chains
//    reachable at s, which no one changes.
//
// Linearizability.
//  * Updates to one bucket are serialised by its lock; an update takes effect at the release
//    store of the word, and reads the chain under the lock, so no update is lost. A failed
//    INSERT / REMOVE takes effect when it read the chain under the lock.
//  * A GET takes effect at its acquire load of the word: the chain it reaches is immutable and
//    is the bucket's content from that store until the next one (the node writes happen
//    before the release store that publishes them; lanes read after the leader's acquire and a
//    warp barrier). Since every key lives in exactly one bucket, the map's state at any
//    instant is the set of the buckets' current chains.
//  * Range queries of batch e take effect at the start of batch e: versions labelled < e are
//    exactly the state after batch e - 1 (batches of a map run in stream order, one at a
//    time), and all writes of batch e are labelled e, so every query reads the same instant,
//    which lies inside every request's interval (all of a batch's requests are pending from
//    the call until it returns). Both passes read the same versions, so they agree.
//
// Reclamation. A node leaves the newest state when an update of batch e replaces it (retired
// into a device list). A reader of batch e can still reach it (following `older` from a head
// labelled e); a reader of batch e + 1 cannot: it stops at the first head labelled <= e,
// which is a live node, and it only follows `older` out of heads made in its own batch, whose
// `older` was live at the start of that batch or made in it. So at the end of batch e, after
// its range fill pass, a small kernel moves the retired list into the free list, and batch
// e + 1 allocates from it before touching fresh pool nodes. Memory therefore stays bounded by
// live nodes + nodes replaced in one batch.
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>

#include "cods/atomic.hpp"
#include "cods/group.hpp"
#include "gpu/device.hpp"
#include "index/lit/gpu_lit.hpp"

namespace duet::lit {

namespace {

using cods::Order;
using Warp = cods::GpuTile<32>;

#define LIT_CUDA_TRY(expr)                                                                            \
  do {                                                                                                \
    cudaError_t lit_e = (expr);                                                                       \
    if (lit_e != cudaSuccess) {                                                                       \
      cudaGetLastError();                                                                             \
      return (lit_e == cudaErrorMemoryAllocation)                                                     \
                 ? Status::ResourceExhausted(std::string(#expr) + ": " + cudaGetErrorString(lit_e))    \
                 : Status::Internal(std::string(#expr) + ": " + cudaGetErrorString(lit_e));            \
    }                                                                                                 \
  } while (0)

constexpr std::uint32_t kNull = 0xFFFFFFFFu;
constexpr unsigned kPairs = 32;
constexpr std::uint64_t kLockBit = std::uint64_t{1} << 63;
constexpr std::uint64_t kTsMask = 0xFFFFFF;
constexpr unsigned kBlock = 256;

struct alignas(64) Node {
  std::uint64_t keys[kPairs];
  std::uint64_t values[kPairs];
  std::uint64_t meta;   // count | next count << 8 | next index << 32
  std::uint64_t ts;     // epoch of the batch that made it
  std::uint64_t older;  // head replaced by this one (kNull: none)
  std::uint64_t pad[5];
};
static_assert(sizeof(Node) == 576, "node layout");

/// Pool counters in device memory. free_count is constant during a batch.
struct Pool {
  unsigned long long free_count;   // entries of free_list usable in this batch
  unsigned long long taken;        // entries taken from the top of free_list in this batch
  unsigned long long bump;         // fresh pool nodes handed out (may exceed capacity)
  unsigned long long retired;      // entries of the retired list
  unsigned long long recycled;     // nodes moved from retired to free, ever
  unsigned long long retries;      // requests that got kRetry in this batch
};

struct View {
  std::uint64_t* buckets;
  Node* nodes;
  std::uint32_t* free_list;
  std::uint32_t* retired;
  Pool* pool;
  std::uint64_t nbuckets, capacity;
  std::uint64_t pmin, width, umin, umax;
};

__host__ __device__ inline std::uint64_t bucket_index(std::uint64_t pmin, std::uint64_t width, std::uint64_t nb,
                                                      std::uint64_t k) {
  if (k <= pmin) return 0;
  const std::uint64_t b = (k - pmin) / width;
  return b < nb ? b : nb - 1;
}

__device__ __forceinline__ std::uint32_t w_head(std::uint64_t w) { return std::uint32_t(w); }
__device__ __forceinline__ unsigned w_count(std::uint64_t w) { return unsigned(w >> 32) & 63u; }
__device__ __forceinline__ std::uint64_t w_ts(std::uint64_t w) { return (w >> 38) & kTsMask; }
__device__ __forceinline__ std::uint64_t make_word(std::uint32_t head, unsigned count, std::uint64_t epoch) {
  return std::uint64_t(head) | (std::uint64_t(count) << 32) | ((epoch & kTsMask) << 38);
}
__device__ __forceinline__ std::uint64_t make_meta(unsigned count, std::uint32_t next, unsigned next_count) {
  return std::uint64_t(count) | (std::uint64_t(next_count) << 8) | (std::uint64_t(next) << 32);
}

__device__ __forceinline__ std::uint64_t ld(const std::uint64_t* p) { return cods::atomic_load(p, Order::relaxed); }
__device__ __forceinline__ void st(std::uint64_t* p, std::uint64_t v) { cods::atomic_store(p, v, Order::relaxed); }

/// vCAS load by the leader, broadcast; the barrier orders the lanes' node reads after it.
__device__ __forceinline__ std::uint64_t warp_load_word(const Warp& g, const std::uint64_t* p) {
  std::uint64_t w = 0;
  if (g.is_leader()) w = cods::atomic_load(p, Order::acquire);
  w = g.shfl(w, 0);
  g.sync();
  return w;
}

__device__ __forceinline__ std::uint64_t warp_max(const Warp& g, std::uint64_t v) {
  for (unsigned off = 16; off > 0; off >>= 1) {
    const std::uint64_t o = g.tile.shfl_xor(v, off);
    v = o > v ? o : v;
  }
  return v;
}

/// Rank of this lane's key among the keys of lanes in `m` (number of them smaller).
__device__ __forceinline__ unsigned rank_in(const Warp& g, std::uint32_t m, std::uint64_t k) {
  unsigned r = 0;
#pragma unroll 8
  for (unsigned j = 0; j < 32; ++j) {
    const std::uint64_t kj = g.shfl(k, j);
    r += ((m >> j) & 1u) && kj < k;
  }
  return r;
}

struct PointOut {
  GpuStatus status;
  std::uint64_t value;
};

// ---------------------------------------------------------------------------------- GET

__device__ PointOut lit_get(const Warp& g, const View& v, std::uint64_t key) {
  const std::uint64_t w = warp_load_word(g, &v.buckets[bucket_index(v.pmin, v.width, v.nbuckets, key)]);
  std::uint32_t idx = w_head(w);
  unsigned cnt = w_count(w);
  const unsigned lane = g.lane();
  while (idx != kNull) {
    const Node& n = v.nodes[idx];
    const bool has = lane < cnt;
    std::uint64_t k = 0, val = 0, meta = 0;
    if (has) {
      k = ld(&n.keys[lane]);
      val = ld(&n.values[lane]);
    }
    if (lane == 31) meta = ld(&n.meta);
    const std::uint32_t m = g.ballot(has && k == key);
    if (m) return {GpuStatus::kOk, g.shfl(val, __ffs(m) - 1)};
    meta = g.shfl(meta, 31);
    const std::uint32_t next = std::uint32_t(meta >> 32);
    if (next == kNull) break;
    if (key < warp_max(g, has ? k : 0)) break;  // the key would be in this node
    idx = next;
    cnt = unsigned(meta >> 8) & 63u;
  }
  return {GpuStatus::kNotFound, 0};
}

// ------------------------------------------------------------------------ allocation

/// Nodes reserved for one update: the j-th is free_list[fc - 1 - (i + j)] for j < p0, else
/// bump + (j - p0).
struct Reservation {
  unsigned long long i, bump, p0, fc;
  __device__ std::uint32_t at(const View& v, unsigned long long j) const {
    return j < p0 ? v.free_list[fc - 1 - (i + j)] : std::uint32_t(bump + (j - p0));
  }
};

__device__ __forceinline__ void retire(const View& v, std::uint32_t idx) {
  const unsigned long long r = atomicAdd(&v.pool->retired, 1ull);
  v.retired[r] = idx;
}

/// Leader only: reserves `need` nodes; false (and nothing kept) when the pool is exhausted.
__device__ bool reserve_nodes(const View& v, unsigned long long fc, unsigned long long need, Reservation* r) {
  r->fc = fc;
  r->i = atomicAdd(&v.pool->taken, need);
  const unsigned long long from_free = r->i >= fc ? 0 : (fc - r->i < need ? fc - r->i : need);
  r->p0 = from_free;
  const unsigned long long rest = need - from_free;
  r->bump = rest ? atomicAdd(&v.pool->bump, rest) : 0;
  if (r->bump + rest <= v.capacity) return true;
  // Give back what was taken: free-list nodes and the fresh ones below capacity go to the
  // retired list (no one can reach them), to be free again next batch.
  for (unsigned long long j = 0; j < from_free; ++j) retire(v, r->at(v, j));
  for (unsigned long long b = r->bump; b < v.capacity && b < r->bump + rest; ++b) retire(v, std::uint32_t(b));
  return false;
}

/// Locks a bucket (the vCAS-aware lock: the leader CASes the lock bit into the word, backing
/// off while it is set) and returns the word as it was, unlocked, to every lane; the warp
/// barrier orders the lanes' node reads after the leader's acquire. Collective.
__device__ std::uint64_t lock_bucket(const Warp& g, std::uint64_t* bw) {
  std::uint64_t w = 0;
  if (g.is_leader()) {
    unsigned backoff = 32;
    for (;;) {
      w = cods::atomic_load(bw, Order::relaxed);
      if (!(w & kLockBit)) {
        std::uint64_t expected = w;
        if (cods::atomic_cas(bw, expected, w | kLockBit, Order::acquire)) break;
      }
      __nanosleep(backoff);
      if (backoff < 1024) backoff *= 2;
    }
  }
  w = g.shfl(w, 0);
  g.sync();
  return w;
}

/// Writes the chain being built: appends nodes, links each to the next, and stamps the head.
struct Emitter {
  Reservation res;
  unsigned long long j = 0;  // nodes emitted
  std::uint32_t prev = kNull, first = kNull;
  unsigned prev_count = 0, first_count = 0;

  /// Collective: lane i < count writes pair i (k, val). Leader links the previous node.
  __device__ void emit(const Warp& g, const View& v, std::uint64_t epoch, std::uint32_t old_head, unsigned count,
                       std::uint64_t k, std::uint64_t val) {
    const std::uint32_t a = res.at(v, j);
    Node& n = v.nodes[a];
    if (g.lane() < count) {
      st(&n.keys[g.lane()], k);
      st(&n.values[g.lane()], val);
    }
    if (g.is_leader()) {
      st(&n.ts, epoch);
      // A head links to the newest version made before this batch, skipping versions this
      // batch made and replaced: only this batch's range queries follow the link, and they
      // want the state at its start, so a hot bucket's walk stays one step long.
      std::uint64_t older = kNull;
      if (j == 0 && old_head != kNull) {
        const Node& o = v.nodes[old_head];
        older = ld(&o.ts) == epoch ? ld(&o.older) : std::uint64_t(old_head);
      }
      st(&n.older, older);
      if (prev != kNull) st(&v.nodes[prev].meta, make_meta(prev_count, a, count));
    }
    if (j == 0) first = a, first_count = count;
    prev = a;
    prev_count = count;
    ++j;
  }
  /// Leader: links the last node to the shared tail.
  __device__ void finish(const Warp& g, const View& v, std::uint32_t tail, unsigned tail_count) {
    if (g.is_leader() && prev != kNull) st(&v.nodes[prev].meta, make_meta(prev_count, tail, tail_count));
  }
};

// ----------------------------------------------------------------- INSERT / REMOVE / UPSERT

__device__ PointOut lit_update(const Warp& g, const View& v, std::uint64_t epoch, unsigned long long fc, GpuOp op,
                               std::uint64_t key, std::uint64_t value) {
  std::uint64_t* bw = &v.buckets[bucket_index(v.pmin, v.width, v.nbuckets, key)];
  const unsigned lane = g.lane();
  const std::uint64_t w = lock_bucket(g, bw);
  const std::uint32_t head = w_head(w);

  // Phase 1: find the target node t (1-based position) and the key's slot in it.
  unsigned t = 0, tcnt = 0, next_cnt = 0;
  std::uint32_t tidx = kNull, next = kNull;
  std::uint64_t k = 0, val = 0;
  int slot = -1;
  if (head != kNull) {
    std::uint32_t idx = head;
    unsigned cnt = w_count(w);
    for (t = 1;; ++t) {
      const Node& n = v.nodes[idx];
      const bool has = lane < cnt;
      k = has ? ld(&n.keys[lane]) : 0;
      val = has ? ld(&n.values[lane]) : 0;
      std::uint64_t meta = lane == 31 ? ld(&n.meta) : 0;
      meta = g.shfl(meta, 31);
      tidx = idx, tcnt = cnt;
      next = std::uint32_t(meta >> 32);
      next_cnt = unsigned(meta >> 8) & 63u;
      const std::uint32_t m = g.ballot(has && k == key);
      if (m) {
        slot = __ffs(m) - 1;
        break;
      }
      if (next == kNull) break;
      if (key < warp_max(g, has ? k : 0)) break;
      idx = next;
      cnt = next_cnt;
    }
  }
  const bool found = slot >= 0;
  const std::uint64_t present = found ? g.shfl(val, unsigned(slot)) : 0;
  PointOut out{GpuStatus::kOk, 0};
  unsigned repl = 0;  // replacement nodes for t
  if (found) {
    if (op == GpuOp::kInsert) out = {GpuStatus::kExists, present};
    else if (op == GpuOp::kRemove) out = {GpuStatus::kOk, present}, repl = tcnt > 1 ? 1 : 0;
    else out = {GpuStatus::kUpdated, present}, repl = 1;
  } else {
    if (op == GpuOp::kRemove) out = {GpuStatus::kNotFound, 0};
    else repl = tcnt == kPairs ? 2 : 1;
  }
  const bool changes = (found && op != GpuOp::kInsert) || (!found && op != GpuOp::kRemove);
  if (!changes) {
    if (g.is_leader()) cods::atomic_store(bw, w, Order::release);  // unlock
    return out;
  }
  const unsigned copies = t > 0 ? t - 1 : 0;
  const unsigned emitted = copies + repl;
  const bool tail_copy = emitted == 0 && next != kNull;
  const bool empty_head = emitted == 0 && next == kNull;
  const unsigned need = emitted + (tail_copy ? 1 : 0) + (empty_head ? 1 : 0);

  Emitter em;
  bool ok = true;
  if (g.is_leader()) ok = reserve_nodes(v, fc, need, &em.res);
  ok = g.shfl(ok, 0);
  if (!ok) {
    if (g.is_leader()) {
      atomicAdd(&v.pool->retries, 1ull);
      cods::atomic_store(bw, w, Order::release);
    }
    return {GpuStatus::kRetry, 0};
  }
  em.res.i = g.shfl(em.res.i, 0);
  em.res.bump = g.shfl(em.res.bump, 0);
  em.res.p0 = g.shfl(em.res.p0, 0);
  em.res.fc = fc;

  // Copies node (idx, cnt) unchanged into the new chain, retires it, and moves (idx, cnt) on
  // to its successor.
  auto copy_and_advance = [&](std::uint32_t& idx, unsigned& cnt) {
    const Node& n = v.nodes[idx];
    const bool has = lane < cnt;
    const std::uint64_t ck = has ? ld(&n.keys[lane]) : 0;
    const std::uint64_t cv = has ? ld(&n.values[lane]) : 0;
    std::uint64_t meta = lane == 31 ? ld(&n.meta) : 0;
    meta = g.shfl(meta, 31);
    em.emit(g, v, epoch, head, cnt, ck, cv);
    if (g.is_leader()) retire(v, idx);
    idx = std::uint32_t(meta >> 32);
    cnt = unsigned(meta >> 8) & 63u;
  };
  // Phase 2: copy nodes 1 .. t-1 (when t > 1 the registers hold node t; reload the prefix).
  std::uint32_t tail = next;
  unsigned tail_count = next_cnt;
  if (copies > 0) {
    std::uint32_t idx = head;
    unsigned cnt = w_count(w);
    for (unsigned j = 1; j < t; ++j) copy_and_advance(idx, cnt);
  }
  // Node t, modified.
  if (found && op == GpuOp::kRemove) {
    const std::uint64_t lk = g.shfl(k, tcnt - 1), lv = g.shfl(val, tcnt - 1);
    if (lane == unsigned(slot)) k = lk, val = lv;
    if (tcnt > 1) em.emit(g, v, epoch, head, tcnt - 1, k, val);
  } else if (found) {  // UPSERT of a present key
    if (lane == unsigned(slot)) val = value;
    em.emit(g, v, epoch, head, tcnt, k, val);
  } else if (tcnt < kPairs) {  // insert into a node with room (or a new first node)
    if (lane == tcnt) k = key, val = value;
    em.emit(g, v, epoch, head, tcnt + 1, k, val);
  } else {  // split a full node: the 17 smallest of the 33 keys, then the 16 largest
    const unsigned r = rank_in(g, 0xFFFFFFFFu, k) + (key < k ? 1u : 0u);
    const unsigned rk = __popc(g.ballot(k < key));
    // Lower node: pair of rank r at slot r (r < 17); the new key at slot rk when rk < 17.
    std::uint64_t lk = k, lv = val;
    // Lane q of the lower node must hold the pair of rank q: gather by rank.
    std::uint64_t lo_k = 0, lo_v = 0, hi_k = 0, hi_v = 0;
    for (unsigned src = 0; src < 32; ++src) {
      const std::uint64_t sk = g.shfl(lk, src), sv = g.shfl(lv, src);
      const unsigned sr = g.shfl(r, src);
      if (sr == lane) lo_k = sk, lo_v = sv;
      if (sr == lane + 17) hi_k = sk, hi_v = sv;
    }
    if (rk == lane) lo_k = key, lo_v = value;
    if (rk == lane + 17) hi_k = key, hi_v = value;
    em.emit(g, v, epoch, head, 17, lo_k, lo_v);
    em.emit(g, v, epoch, head, 16, hi_k, hi_v);
  }
  if (t > 0 && g.is_leader()) retire(v, tidx);
  if (tail_copy) copy_and_advance(tail, tail_count);  // the first node emptied: its successor becomes the head
  if (empty_head) em.emit(g, v, epoch, head, 0, 0, 0);
  em.finish(g, v, tail, tail_count);
  // Publish: every lane's node writes, then the leader's release store of the new word.
  cods::fence(Order::release);
  g.sync();
  if (g.is_leader()) cods::atomic_store(bw, make_word(em.first, em.first_count, epoch), Order::release);
  return out;
}

// ------------------------------------------------------- updates grouped by bucket

/// A request's outcome written by the lane that holds it.
__device__ __forceinline__ void put(GpuStatus* status, std::uint64_t* out, std::uint64_t i, PointOut o) {
  status[i] = o.status;
  out[i] = o.value;
}

/// Applies the updates held by lanes j..e (all on bucket b, in batch order) under one lock
/// acquisition and one published node, when the bucket is a single node and stays within 32
/// pairs; the rest go one by one through lit_update. The combined requests take effect in
/// lane order at the one release store, so each sees the ones before it. Collective.
__device__ void apply_run(const Warp& g, const View& v, std::uint64_t epoch, unsigned long long fc, std::uint64_t b,
                          unsigned j, unsigned e, GpuOp op, std::uint64_t key, std::uint64_t value, std::uint64_t ri,
                          GpuStatus* __restrict__ status, std::uint64_t* __restrict__ out) {
  const unsigned lane = g.lane();
  std::uint64_t* bw = &v.buckets[b];
  const std::uint64_t w = lock_bucket(g, bw);
  const std::uint32_t head = w_head(w);
  unsigned count = head == kNull ? 0 : w_count(w);
  std::uint64_t k = 0, val = 0, meta = 0;
  if (head != kNull) {
    const Node& n = v.nodes[head];
    if (lane < count) k = ld(&n.keys[lane]), val = ld(&n.values[lane]);
    if (lane == 31) meta = ld(&n.meta);
  }
  meta = g.shfl(meta, 31);
  unsigned r = j;
  bool changed = false;
  if (head == kNull || std::uint32_t(meta >> 32) == kNull) {  // one node (or none): combine
    for (; r <= e; ++r) {
      const GpuOp rop = GpuOp(g.shfl(unsigned(op), r));
      const std::uint64_t rk = g.shfl(key, r), rv = g.shfl(value, r);
      const std::uint32_t m = g.ballot(lane < count && k == rk);
      const int slot = m ? __ffs(m) - 1 : -1;
      const std::uint64_t present = m ? g.shfl(val, unsigned(slot)) : 0;
      PointOut o{GpuStatus::kOk, 0};
      if (m) {
        if (rop == GpuOp::kInsert) {
          o = {GpuStatus::kExists, present};
        } else if (rop == GpuOp::kRemove) {
          o = {GpuStatus::kOk, present};
          const std::uint64_t lk = g.shfl(k, count - 1), lv = g.shfl(val, count - 1);
          if (lane == unsigned(slot)) k = lk, val = lv;
          --count;
          changed = true;
        } else {
          o = {GpuStatus::kUpdated, present};
          if (lane == unsigned(slot)) val = rv;
          changed = true;
        }
      } else if (rop == GpuOp::kRemove) {
        o = {GpuStatus::kNotFound, 0};
      } else {
        if (count == kPairs) break;  // the node would split: the rest go one by one
        if (lane == count) k = rk, val = rv;
        ++count;
        changed = true;
      }
      if (lane == r) put(status, out, ri, o);
    }
  }
  if (!changed) {
    if (g.is_leader()) cods::atomic_store(bw, w, Order::release);  // unlock
  } else {
    Emitter em;
    bool ok = true;
    if (g.is_leader()) ok = reserve_nodes(v, fc, 1, &em.res);
    ok = g.shfl(ok, 0);
    if (!ok) {  // nothing was published: every combined request retries
      if (g.is_leader()) {
        atomicAdd(&v.pool->retries, 1ull);
        cods::atomic_store(bw, w, Order::release);
      }
      if (lane >= j && lane < r) put(status, out, ri, {GpuStatus::kRetry, 0});
    } else {
      em.res.i = g.shfl(em.res.i, 0);
      em.res.bump = g.shfl(em.res.bump, 0);
      em.res.p0 = g.shfl(em.res.p0, 0);
      em.res.fc = fc;
      em.emit(g, v, epoch, head, count, k, val);
      em.finish(g, v, kNull, 0);
      if (head != kNull && g.is_leader()) retire(v, head);
      cods::fence(Order::release);
      g.sync();
      if (g.is_leader()) cods::atomic_store(bw, make_word(em.first, em.first_count, epoch), Order::release);
    }
  }
  for (; r <= e; ++r) {  // not combined: a chained bucket, or a node that must split
    const GpuOp rop = GpuOp(g.shfl(unsigned(op), r));
    const PointOut o = lit_update(g, v, epoch, fc, rop, g.shfl(key, r), g.shfl(value, r));
    if (lane == r) put(status, out, ri, o);
  }
}

/// One sorted update, as a lane holds it (b = nbuckets: none).
struct SortedUpdate {
  std::uint32_t b;
  std::uint64_t ri, key, value;
  GpuOp op;
};

__device__ __forceinline__ SortedUpdate load_update(const View& v, const GpuOp* __restrict__ ops,
                                                    const std::uint64_t* __restrict__ keys,
                                                    const std::uint64_t* __restrict__ values,
                                                    const std::uint32_t* __restrict__ sorted_bucket,
                                                    const std::uint32_t* __restrict__ sorted_index, std::uint64_t np,
                                                    std::uint64_t i) {
  SortedUpdate u{std::uint32_t(v.nbuckets), 0, 0, 0, GpuOp::kGet};
  if (i < np) {
    u.b = sorted_bucket[i];
    if (u.b < v.nbuckets) {
      u.ri = sorted_index[i];
      u.op = ops[u.ri];
      u.key = keys[u.ri];
      u.value = u.op == GpuOp::kRemove ? 0 : values[u.ri];
    }
  }
  return u;
}

/// The batch's valid updates, sorted by bucket (stable, so in batch order within a bucket).
/// Each warp takes 32 sorted entries and applies every run of one bucket that starts among
/// them with apply_run, following a run past its 32 entries to its end (the warps whose
/// entries a run spills into skip it). So one warp owns each bucket for the batch: a hot
/// bucket is rewritten once per 32 of its updates, with no other warp waiting on its lock.
__global__ void __launch_bounds__(kBlock, 4) update_kernel(View v, std::uint64_t epoch, const GpuOp* __restrict__ ops,
                                                        const std::uint64_t* __restrict__ keys,
                                                        const std::uint64_t* __restrict__ values,
                                                        const std::uint32_t* __restrict__ sorted_bucket,
                                                        const std::uint32_t* __restrict__ sorted_index, std::uint64_t np,
                                                        GpuStatus* __restrict__ status, std::uint64_t* __restrict__ out) {
  const Warp g = Warp::of_this_block();
  const std::uint64_t warps = std::uint64_t(gridDim.x) * blockDim.x / 32;
  const std::uint64_t warp = (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const unsigned long long fc = v.pool->free_count;
  const unsigned lane = g.lane();
  for (std::uint64_t base = warp * 32; base < np; base += warps * 32) {
    const SortedUpdate u = load_update(v, ops, keys, values, sorted_bucket, sorted_index, np, base + lane);
    const std::uint32_t valid = g.ballot(u.b < v.nbuckets);
    if (!valid) return;  // sorted: the rest are reads and bad requests
    // Entries of a run that began before this window belong to the warp that owns its start.
    const std::uint32_t before = base > 0 ? sorted_bucket[base - 1] : std::uint32_t(v.nbuckets);
    unsigned j = __popc(g.ballot(u.b == before) & valid);  // sorted: a prefix
    while (j < 32 && ((valid >> j) & 1u)) {
      const std::uint32_t bj = g.shfl(u.b, j);
      const std::uint32_t same = g.ballot(u.b == bj) & valid;
      const unsigned e = 31 - __clz(same);  // sorted: the run is lanes j..e
      apply_run(g, v, epoch, fc, bj, j, e, u.op, u.key, u.value, u.ri, status, out);
      if (e == 31) {  // the run may go on past this window: follow it
        for (std::uint64_t pos = base + 32; pos < np; pos += 32) {
          const SortedUpdate w = load_update(v, ops, keys, values, sorted_bucket, sorted_index, np, pos + lane);
          const std::uint32_t more = g.ballot(w.b == bj);
          if (!(more & 1u)) break;
          const unsigned last = 31 - __clz(more);
          apply_run(g, v, epoch, fc, bj, 0, last, w.op, w.key, w.value, w.ri, status, out);
          if (last < 31) break;
        }
      }
      j = e + 1;
    }
  }
}

/// Sort keys for update_kernel: the bucket of each valid update, nbuckets for anything else.
__global__ void update_keys_kernel(View v, const GpuOp* __restrict__ ops, const std::uint64_t* __restrict__ keys,
                                   const std::uint64_t* __restrict__ values, std::uint64_t np,
                                   std::uint32_t* __restrict__ bucket, std::uint32_t* __restrict__ index) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < np;
       i += std::uint64_t(gridDim.x) * blockDim.x) {
    const std::uint8_t op = std::uint8_t(ops[i]);
    const std::uint64_t k = keys[i];
    const bool upd = op >= 1 && op <= 3 && k >= v.umin && k <= v.umax && (op == 2 || values != nullptr);
    bucket[i] = upd ? std::uint32_t(bucket_index(v.pmin, v.width, v.nbuckets, k)) : std::uint32_t(v.nbuckets);
    index[i] = std::uint32_t(i);
  }
}

// ---------------------------------------------------------------------------- RANGE

struct RangeOut {
  std::uint64_t count;
  bool more;
  std::uint64_t resume;
};

/// Emits the in-range keys among the lanes' (has, k) in key order: counts them (kFill false)
/// or writes them and their values at ok/ov + r.count (kFill true), stopping at `limit` with
/// `more` and `resume` set. Collective. Returns true when the walk must stop (limit reached).
template <bool kFill>
__device__ __forceinline__ bool emit_sorted(const Warp& g, RangeOut& r, bool has, std::uint64_t k,
                                            const std::uint64_t* value_at, std::uint64_t start, std::uint64_t end,
                                            std::uint64_t limit, std::uint64_t* __restrict__ ok,
                                            std::uint64_t* __restrict__ ov) {
  const bool in = has && k >= start && k <= end;
  const std::uint32_t m = g.ballot(in);
  if (!m) return false;
  const unsigned c = __popc(m);
  const unsigned rank = rank_in(g, m, k);  // collective: every lane takes part
  if (kFill && in && r.count + rank < limit) {
    ok[r.count + rank] = k;
    ov[r.count + rank] = ld(value_at);
  }
  if (r.count + c > limit) {
    const std::uint32_t first_out = g.ballot(in && r.count + rank == limit);
    r.resume = g.shfl(k, __ffs(first_out) - 1);
    r.more = true;
    r.count = limit;
    return true;
  }
  r.count += c;
  return false;
}

/// Walks [start, end] at snapshot `snap`, counting (kFill false) or writing into ok/ov
/// (kFill true) at most `limit` entries in key order.
///
/// The buckets of the range are taken 32 at a time, one per lane, so their words, versions
/// and head-node headers load in parallel (two dependent rounds for up to 32 buckets, not two
/// per bucket). Then the pairs of consecutive head nodes are packed onto the lanes, up to 32
/// pairs per round, and read in one round; a bucket whose chain has more nodes ends its round
/// and its further nodes are walked one by one. Keys of a bucket are below the next bucket's,
/// and within a chain below the next node's, so ranking each round's keys keeps key order.
template <bool kFill>
__device__ RangeOut range_walk(const Warp& g, const View& v, std::uint64_t epoch, std::uint64_t snap,
                               std::uint64_t start, std::uint64_t end, std::uint64_t limit,
                               std::uint64_t* __restrict__ ok, std::uint64_t* __restrict__ ov) {
  RangeOut r{0, false, 0};
  const unsigned lane = g.lane();
  const std::uint64_t b_first = bucket_index(v.pmin, v.width, v.nbuckets, start);
  const std::uint64_t b_end = bucket_index(v.pmin, v.width, v.nbuckets, end);
  for (std::uint64_t b0 = b_first; b0 <= b_end; b0 += 32) {
    const unsigned nb = unsigned(b_end - b0 + 1 < 32 ? b_end - b0 + 1 : 32);
    // Round 1 and 2, one bucket per lane: its version at snap, then its head's header.
    std::uint32_t idx = kNull;
    unsigned cnt = 0;
    std::uint64_t meta = 0;
    if (lane < nb) {
      const std::uint64_t w = cods::atomic_load(&v.buckets[b0 + lane], Order::acquire);
      idx = w_head(w);
      cnt = w_count(w);
      if (idx != kNull && w_ts(w) == (epoch & kTsMask)) {  // made in this batch: walk back
        for (;;) {
          const Node& n = v.nodes[idx];
          if (ld(&n.ts) <= snap) {
            cnt = unsigned(ld(&n.meta)) & 63u;
            break;
          }
          idx = std::uint32_t(ld(&n.older));
          if (idx == kNull) break;
        }
      }
      if (idx == kNull) cnt = 0;
      else meta = ld(&v.nodes[idx].meta);
    }
    g.sync();  // orders every lane's node reads below after the loads above
    const bool chained = lane < nb && idx != kNull && std::uint32_t(meta >> 32) != kNull;
    const std::uint32_t chained_mask = g.ballot(chained);
    // Exclusive prefix sum of the head counts over the lanes.
    unsigned pre = cnt;
    for (unsigned off = 1; off < 32; off <<= 1) {
      const unsigned o = g.tile.shfl_up(pre, off);
      if (lane >= off) pre += o;
    }
    pre -= cnt;
    unsigned js = 0;
    while (js < nb) {
      // This round: buckets js..je, at most 32 pairs, ending at the first chained bucket.
      const unsigned base = g.shfl(pre, js);
      const bool fits = lane >= js && lane < nb && pre + cnt - base <= 32;
      std::uint32_t fit_mask = g.ballot(fits) >> js << js;
      // keep only the prefix of consecutive fitting buckets
      unsigned je = js;
      while (je + 1 < nb && ((fit_mask >> (je + 1)) & 1u) && !((chained_mask >> je) & 1u)) ++je;
      // Lane p takes pair (p - pre_j + base) of bucket j's head, for the bucket j it falls in.
      std::uint32_t my_idx = kNull;
      unsigned my_pair = 0;
      for (unsigned j = js; j <= je; ++j) {
        const unsigned pj = g.shfl(pre, j) - base, cj = g.shfl(cnt, j);
        const std::uint32_t ij = g.shfl(idx, j);
        if (lane >= pj && lane < pj + cj) {
          my_idx = ij;
          my_pair = lane - pj;
        }
      }
      const bool has = my_idx != kNull;
      const std::uint64_t k = has ? ld(&v.nodes[my_idx].keys[my_pair]) : 0;
      const std::uint64_t* val = has ? &v.nodes[my_idx].values[my_pair] : nullptr;
      if (emit_sorted<kFill>(g, r, has, k, val, start, end, limit, ok, ov)) return r;
      if ((chained_mask >> je) & 1u) {  // the rest of bucket je's chain, node by node
        std::uint64_t m = g.shfl(meta, je);
        std::uint32_t nidx = std::uint32_t(m >> 32);
        unsigned ncnt = unsigned(m >> 8) & 63u;
        while (nidx != kNull) {
          const Node& n = v.nodes[nidx];
          const bool h = lane < ncnt;
          const std::uint64_t kk = h ? ld(&n.keys[lane]) : 0;
          std::uint64_t mm = lane == 31 ? ld(&n.meta) : 0;
          if (emit_sorted<kFill>(g, r, h, kk, &n.values[lane], start, end, limit, ok, ov)) return r;
          if (g.any(h && kk > end)) return r;  // later nodes and buckets hold larger keys
          mm = g.shfl(mm, 31);
          nidx = std::uint32_t(mm >> 32);
          ncnt = unsigned(mm >> 8) & 63u;
        }
      }
      js = je + 1;
    }
  }
  return r;
}

// --------------------------------------------------------------------------- kernels

__device__ __forceinline__ bool in_universe(const View& v, std::uint64_t k) { return k >= v.umin && k <= v.umax; }

/// Point requests [0, np) and range counts [np, np + nr): each warp takes 32 items, one per
/// lane, and runs them in turn together.
__global__ void __launch_bounds__(kBlock, 4) batch_kernel(View v, std::uint64_t epoch, const GpuOp* __restrict__ ops,
                                                       const std::uint64_t* __restrict__ keys,
                                                       const std::uint64_t* __restrict__ values,
                                                       GpuStatus* __restrict__ status, std::uint64_t* __restrict__ out,
                                                       std::uint64_t np, const std::uint64_t* __restrict__ starts,
                                                       const std::uint64_t* __restrict__ ends, std::uint64_t nr,
                                                       std::uint64_t limit, std::uint64_t* __restrict__ counts,
                                                       GpuStatus* __restrict__ rstatus, std::uint8_t* __restrict__ more,
                                                       std::uint64_t* __restrict__ resume) {
  const Warp g = Warp::of_this_block();
  const std::uint64_t warps = std::uint64_t(gridDim.x) * blockDim.x / 32;
  const std::uint64_t warp = (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const std::uint64_t total = np + nr;
  const std::uint64_t snap = epoch - 1;
  for (std::uint64_t base = warp * 32; base < total; base += warps * 32) {
    const std::uint64_t i = base + g.lane();
    std::uint8_t op = 0;
    std::uint64_t a = 0, c = 0;
    bool bad = false;
    if (i < np) {
      op = std::uint8_t(ops[i]);
      a = keys[i];
      bad = op > 3 || !in_universe(v, a);
      if (!bad && (op == std::uint8_t(GpuOp::kInsert) || op == std::uint8_t(GpuOp::kUpsert))) {
        if (values) c = values[i];
        else bad = true;
      }
    } else if (i < total) {
      a = starts[i - np];
      c = ends[i - np];
      bad = a > c || !in_universe(v, a) || !in_universe(v, c);
    }
    const unsigned n = unsigned(total - base < 32 ? total - base : 32);
    for (unsigned r = 0; r < n; ++r) {
      const std::uint64_t item = base + r;
      const bool rb = g.shfl(bad, r);
      const std::uint64_t ra = g.shfl(a, r), rc = g.shfl(c, r);
      if (item < np) {
        const GpuOp rop = GpuOp(g.shfl(unsigned(op), r));
        if (!rb && rop != GpuOp::kGet) continue;  // applied by update_kernel
        PointOut o{GpuStatus::kInvalid, 0};
        if (!rb) o = lit_get(g, v, ra);
        if (g.lane() == r) status[item] = o.status, out[item] = o.value;
      } else {
        RangeOut o{0, false, 0};
        if (!rb) o = range_walk<false>(g, v, epoch, snap, ra, rc, limit, nullptr, nullptr);
        if (g.lane() == r) {
          const std::uint64_t q = item - np;
          counts[q] = o.count;
          rstatus[q] = rb ? GpuStatus::kInvalid : GpuStatus::kOk;
          more[q] = o.more ? 1 : 0;
          resume[q] = o.resume;
        }
      }
    }
  }
}

/// Second range pass: writes each valid query's entries at its offset.
__global__ void __launch_bounds__(kBlock) fill_kernel(View v, std::uint64_t epoch, const std::uint64_t* __restrict__ starts,
                                                      const std::uint64_t* __restrict__ ends, std::uint64_t nr,
                                                      std::uint64_t limit, const GpuStatus* __restrict__ rstatus,
                                                      const std::uint64_t* __restrict__ offsets,
                                                      std::uint64_t* __restrict__ okeys, std::uint64_t* __restrict__ ovals) {
  const Warp g = Warp::of_this_block();
  const std::uint64_t warps = std::uint64_t(gridDim.x) * blockDim.x / 32;
  const std::uint64_t warp = (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  for (std::uint64_t base = warp * 32; base < nr; base += warps * 32) {
    const std::uint64_t i = base + g.lane();
    std::uint64_t a = 0, c = 0, off = 0;
    bool run = false;
    if (i < nr) {
      run = rstatus[i] == GpuStatus::kOk && offsets[i + 1] > offsets[i];
      a = starts[i], c = ends[i], off = offsets[i];
    }
    const unsigned n = unsigned(nr - base < 32 ? nr - base : 32);
    for (unsigned r = 0; r < n; ++r) {
      if (!g.shfl(run, r)) continue;
      const std::uint64_t o = g.shfl(off, r);
      range_walk<true>(g, v, epoch, epoch - 1, g.shfl(a, r), g.shfl(c, r), limit, okeys + o, ovals + o);
    }
  }
}

/// End of batch, step 1: append the retired list to the free list's untaken part.
__global__ void recycle_copy_kernel(View v) {
  const unsigned long long fc = v.pool->free_count, taken = v.pool->taken, nret = v.pool->retired;
  const unsigned long long remaining = fc - (taken < fc ? taken : fc);
  for (unsigned long long i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < nret;
       i += std::uint64_t(gridDim.x) * blockDim.x)
    v.free_list[remaining + i] = v.retired[i];
}

/// End of batch, step 2: the counters.
__global__ void recycle_count_kernel(Pool* p) {
  const unsigned long long remaining = p->free_count - (p->taken < p->free_count ? p->taken : p->free_count);
  p->free_count = remaining + p->retired;
  p->recycled += p->retired;
  p->taken = 0;
  p->retired = 0;
  p->retries = 0;
}

__global__ void init_buckets_kernel(std::uint64_t* b, std::uint64_t n) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::uint64_t(gridDim.x) * blockDim.x)
    b[i] = std::uint64_t(kNull);
}

template <class T>
struct DevBuf {
  T* p = nullptr;
  std::size_t cap = 0;
  ~DevBuf() { cudaFree(p); }
  Status reserve(std::size_t n) {
    if (n <= cap) return Status::Ok();
    cudaFree(p);
    p = nullptr;
    cap = 0;
    const std::size_t want = std::max<std::size_t>(n, 1024);
    LIT_CUDA_TRY(cudaMalloc(&p, want * sizeof(T)));
    cap = want;
    return Status::Ok();
  }
};

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
    cudaFree(scan_tmp_);
    cudaFree(sort_tmp_);
    if (h_pool_) cudaFreeHost(h_pool_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  Status init() {
    const gpu::DeviceInfo& dev = gpu::device();
    if (!dev.present) return Status::Unavailable("no GPU: " + dev.reason);
    sms_ = dev.sm_count > 0 ? dev.sm_count : 1;
    const std::uint64_t span = config_.predicted_max - config_.predicted_min;  // + 1 may wrap
    nbuckets_ = span / config_.bucket_width + 1;
    if (nbuckets_ > (std::uint64_t{1} << 31)) return Status::InvalidArgument("bucket_width: more than 2^31 buckets");
    capacity_ = config_.node_capacity ? config_.node_capacity : nbuckets_ + nbuckets_ / 2 + (std::uint64_t{1} << 20);
    if (capacity_ >= kNull) return Status::InvalidArgument("node_capacity: at most 2^32 - 2 nodes");
    LIT_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    view_.nbuckets = nbuckets_;
    view_.capacity = capacity_;
    view_.pmin = config_.predicted_min;
    view_.width = config_.bucket_width;
    view_.umin = config_.universe_min;
    view_.umax = config_.universe_max;
    LIT_CUDA_TRY(cudaMalloc(&view_.buckets, nbuckets_ * 8));
    LIT_CUDA_TRY(cudaMalloc(&view_.nodes, capacity_ * sizeof(Node)));
    LIT_CUDA_TRY(cudaMalloc(&view_.free_list, capacity_ * 4));
    LIT_CUDA_TRY(cudaMalloc(&view_.retired, capacity_ * 4));
    LIT_CUDA_TRY(cudaMalloc(&view_.pool, sizeof(Pool)));
    LIT_CUDA_TRY(cudaMallocHost(&h_pool_, sizeof(Pool) + 8));
    LIT_CUDA_TRY(cudaMemsetAsync(view_.pool, 0, sizeof(Pool), stream_));
    init_buckets_kernel<<<sms_ * 8, kBlock, 0, stream_>>>(view_.buckets, nbuckets_);
    LIT_CUDA_TRY(cudaGetLastError());
    LIT_CUDA_TRY(cudaStreamSynchronize(stream_));
    return Status::Ok();
  }

  const GpuConfig& config() const override { return config_; }
  std::uint64_t bucket_of(std::uint64_t key) const override {
    return bucket_index(config_.predicted_min, config_.bucket_width, nbuckets_, key);
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
    Status s = check_args(points, results, ranges, rr != nullptr);
    if (!s.ok()) return s;
    std::lock_guard<std::mutex> lock(m_);
    return run_locked(points, results, ranges, rr);
  }

  Status execute(const GpuPointBatch& points, GpuPointResults results, const GpuRangeBatch* ranges,
                 GpuRangeResults* rr) override {
    Status s = check_args(points, results, ranges, rr != nullptr);
    if (!s.ok()) return s;
    std::lock_guard<std::mutex> lock(m_);
    const std::size_t np = points.n, nr = ranges ? ranges->n : 0;
    GpuPointBatch dp{nullptr, nullptr, nullptr, np};
    GpuPointResults dres{};
    if (np) {
      if (!(s = h_ops_.reserve(np)).ok() || !(s = h_keys_.reserve(np)).ok() || !(s = h_out_.reserve(np)).ok() ||
          !(s = h_status_.reserve(np)).ok())
        return s;
      LIT_CUDA_TRY(cudaMemcpyAsync(h_ops_.p, points.ops, np, cudaMemcpyHostToDevice, stream_));
      LIT_CUDA_TRY(cudaMemcpyAsync(h_keys_.p, points.keys, np * 8, cudaMemcpyHostToDevice, stream_));
      dp.ops = h_ops_.p;
      dp.keys = h_keys_.p;
      if (points.values) {
        if (!(s = h_values_.reserve(np)).ok()) return s;
        LIT_CUDA_TRY(cudaMemcpyAsync(h_values_.p, points.values, np * 8, cudaMemcpyHostToDevice, stream_));
        dp.values = h_values_.p;
      }
      dres = {h_status_.p, h_out_.p};
    }
    GpuRangeBatch drb{};
    if (nr) {
      if (!(s = h_starts_.reserve(nr)).ok() || !(s = h_ends_.reserve(nr)).ok()) return s;
      LIT_CUDA_TRY(cudaMemcpyAsync(h_starts_.p, ranges->starts, nr * 8, cudaMemcpyHostToDevice, stream_));
      LIT_CUDA_TRY(cudaMemcpyAsync(h_ends_.p, ranges->ends, nr * 8, cudaMemcpyHostToDevice, stream_));
      drb = {h_starts_.p, h_ends_.p, nr, ranges->limit};
    }
    GpuRangeDeviceResults dr{};
    const Status run = run_locked(dp, dres, nr || ranges ? &drb : nullptr, &dr);
    if (!run.ok() && run.code() != StatusCode::kResourceExhausted) return run;
    if (np) {
      LIT_CUDA_TRY(cudaMemcpyAsync(results.status, dres.status, np, cudaMemcpyDeviceToHost, stream_));
      LIT_CUDA_TRY(cudaMemcpyAsync(results.out, dres.out, np * 8, cudaMemcpyDeviceToHost, stream_));
    }
    if (rr) {
      rr->snapshot = dr.snapshot;
      rr->offsets.assign(nr + 1, 0);
      rr->status.assign(nr, GpuStatus::kOk);
      rr->more.assign(nr, 0);
      rr->resume.assign(nr, 0);
      rr->keys.resize(dr.total);
      rr->values.resize(dr.total);
      if (nr && dr.offsets) {
        LIT_CUDA_TRY(cudaMemcpyAsync(rr->offsets.data(), dr.offsets, (nr + 1) * 8, cudaMemcpyDeviceToHost, stream_));
        LIT_CUDA_TRY(cudaMemcpyAsync(rr->status.data(), dr.status, nr, cudaMemcpyDeviceToHost, stream_));
        LIT_CUDA_TRY(cudaMemcpyAsync(rr->more.data(), dr.more, nr, cudaMemcpyDeviceToHost, stream_));
        LIT_CUDA_TRY(cudaMemcpyAsync(rr->resume.data(), dr.resume, nr * 8, cudaMemcpyDeviceToHost, stream_));
      }
      if (dr.total && dr.keys) {
        LIT_CUDA_TRY(cudaMemcpyAsync(rr->keys.data(), dr.keys, dr.total * 8, cudaMemcpyDeviceToHost, stream_));
        LIT_CUDA_TRY(cudaMemcpyAsync(rr->values.data(), dr.values, dr.total * 8, cudaMemcpyDeviceToHost, stream_));
      }
    }
    LIT_CUDA_TRY(cudaStreamSynchronize(stream_));
    return run;
  }

 private:
  static Status check_args(const GpuPointBatch& p, const GpuPointResults& r, const GpuRangeBatch* ranges,
                           bool have_range_out) {
    if (p.n && (!p.ops || !p.keys || !r.status || !r.out))
      return Status::InvalidArgument("point batch: ops, keys, status and out are required");
    if (ranges && ranges->n && (!ranges->starts || !ranges->ends))
      return Status::InvalidArgument("range batch: starts and ends are required");
    if (ranges && !have_range_out) return Status::InvalidArgument("range batch without a range result");
    return Status::Ok();
  }

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
          LIT_CUDA_TRY(cudaMemsetAsync(counts_.p, 0, 8, stream_));
          rr->offsets = counts_.p;
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
      LIT_CUDA_TRY(cudaMemsetAsync(counts_.p + nr, 0, 8, stream_));
    }
    const std::uint64_t epoch = ++epoch_;
    if (np) {  // updates first, grouped by bucket (see update_kernel)
      if (!(s = sort_bucket_.reserve(2 * np)).ok() || !(s = sort_index_.reserve(2 * np)).ok()) return s;
      std::uint32_t *kin = sort_bucket_.p, *kout = sort_bucket_.p + np, *iin = sort_index_.p, *iout = sort_index_.p + np;
      update_keys_kernel<<<grid_for(np), kBlock, 0, stream_>>>(view_, p.ops, p.keys, p.values, np, kin, iin);
      LIT_CUDA_TRY(cudaGetLastError());
      const int end_bit = 64 - __builtin_clzll(nbuckets_);  // the sentinel nbuckets fits
      std::size_t tmp = 0;
      LIT_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, tmp, kin, kout, iin, iout, np, 0, end_bit, stream_));
      if (tmp > sort_tmp_bytes_) {
        cudaFree(sort_tmp_);
        sort_tmp_ = nullptr;
        sort_tmp_bytes_ = 0;
        LIT_CUDA_TRY(cudaMalloc(&sort_tmp_, tmp));
        sort_tmp_bytes_ = tmp;
      }
      LIT_CUDA_TRY(cub::DeviceRadixSort::SortPairs(sort_tmp_, tmp, kin, kout, iin, iout, np, 0, end_bit, stream_));
      update_kernel<<<grid_for(np), kBlock, 0, stream_>>>(view_, epoch, p.ops, p.keys, p.values, kout, iout, np,
                                                          r.status, r.out);
      LIT_CUDA_TRY(cudaGetLastError());
    }
    batch_kernel<<<grid_for(np + nr), kBlock, 0, stream_>>>(view_, epoch, p.ops, p.keys, p.values, r.status, r.out, np,
                                                            nr ? ranges->starts : nullptr, nr ? ranges->ends : nullptr,
                                                            nr, limit, counts_.p, rstatus_.p, more_.p, resume_.p);
    LIT_CUDA_TRY(cudaGetLastError());
    std::uint64_t total = 0;
    if (nr) {
      std::size_t tmp = 0;
      LIT_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, tmp, counts_.p, offsets_.p, nr + 1, stream_));
      if (tmp > scan_tmp_bytes_) {
        cudaFree(scan_tmp_);
        scan_tmp_ = nullptr;
        scan_tmp_bytes_ = 0;
        LIT_CUDA_TRY(cudaMalloc(&scan_tmp_, tmp));
        scan_tmp_bytes_ = tmp;
      }
      LIT_CUDA_TRY(cub::DeviceScan::ExclusiveSum(scan_tmp_, tmp, counts_.p, offsets_.p, nr + 1, stream_));
      std::uint64_t* h_total = reinterpret_cast<std::uint64_t*>(h_pool_ + 1);
      LIT_CUDA_TRY(cudaMemcpyAsync(h_total, offsets_.p + nr, 8, cudaMemcpyDeviceToHost, stream_));
      LIT_CUDA_TRY(cudaStreamSynchronize(stream_));
      total = *h_total;
      Status grow = okeys_.reserve(total);
      if (grow.ok()) grow = ovals_.reserve(total);
      if (!grow.ok()) {  // the point requests ran; the ranges report no entries
        recycle();
        return grow;
      }
      if (total)
        fill_kernel<<<grid_for(nr), kBlock, 0, stream_>>>(view_, epoch, ranges->starts, ranges->ends, nr, limit,
                                                          rstatus_.p, offsets_.p, okeys_.p, ovals_.p);
      LIT_CUDA_TRY(cudaGetLastError());
    }
    if (rr) {
      rr->offsets = nr ? offsets_.p : nullptr;
      rr->keys = okeys_.p;
      rr->values = ovals_.p;
      rr->status = rstatus_.p;
      rr->more = more_.p;
      rr->resume = resume_.p;
      rr->total = total;
      rr->snapshot = epoch - 1;
    }
    // Read the retry counter before the recycle step clears it.
    LIT_CUDA_TRY(cudaMemcpyAsync(h_pool_, view_.pool, sizeof(Pool), cudaMemcpyDeviceToHost, stream_));
    s = recycle();
    if (!s.ok()) return s;
    LIT_CUDA_TRY(cudaStreamSynchronize(stream_));
    if (h_pool_->retries) return Status::ResourceExhausted(std::to_string(h_pool_->retries) +
                                                           " requests found the node pool exhausted (kRetry)");
    return Status::Ok();
  }

  Status recycle() {
    recycle_copy_kernel<<<sms_ * 4, kBlock, 0, stream_>>>(view_);
    recycle_count_kernel<<<1, 1, 0, stream_>>>(view_.pool);
    LIT_CUDA_TRY(cudaGetLastError());
    return Status::Ok();
  }

  GpuConfig config_;
  std::mutex m_;
  cudaStream_t stream_ = nullptr;
  int sms_ = 1;
  std::uint64_t nbuckets_ = 0, capacity_ = 0, epoch_ = 0;
  View view_{};
  Pool* h_pool_ = nullptr;  // pinned; followed by one word for the range total
  void* scan_tmp_ = nullptr;
  std::size_t scan_tmp_bytes_ = 0;
  void* sort_tmp_ = nullptr;
  std::size_t sort_tmp_bytes_ = 0;
  DevBuf<std::uint32_t> sort_bucket_, sort_index_;  // update_kernel's sort: keys in | out, indexes in | out
  DevBuf<std::uint64_t> counts_, offsets_, resume_, okeys_, ovals_;
  DevBuf<GpuStatus> rstatus_;
  DevBuf<std::uint8_t> more_;
  // Staging for the host entry point.
  DevBuf<GpuOp> h_ops_;
  DevBuf<GpuStatus> h_status_;
  DevBuf<std::uint64_t> h_keys_, h_values_, h_out_, h_starts_, h_ends_;
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

}  // namespace duet::lit
