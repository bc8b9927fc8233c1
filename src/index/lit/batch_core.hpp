// The batched LIT's algorithm (dissertation 6.4), written once against CODS and compiled for
// both processors: the GPU map (gpu_lit.cu) runs it on warps (cods::GpuTile<32>), the CPU twin
// (cpu_batch_map.cpp) on CPU threads (cods::CpuThread). See batch.hpp for the contract.
//
// Groups and slots. A node holds 32 pairs and a group works on all of them together: pair i is
// slot i of a Fragment<32, Group> (cods/cobject.hpp), held by lane i of a warp, or by the one
// CPU thread as element i. Values that belong to slots but are not pairs (a range walk's 32
// buckets, ranks) live in Slots<T, Group>, placed the same way. A group is either one CPU thread
// or a whole warp, so slots and lanes coincide on the GPU. Requests are held one per lane: a
// warp works through 32 requests at once (in turn, or combined), a CPU thread through one.
//
// Layout.
//  * Root level: one 64-bit bucket word per bucket, the bucket's boundary marker and its vCAS
//    object. Bits 0-31: index of the bucket's newest head node (kNull: never written, empty);
//    32-37: that node's pair count; 38-61: low 24 bits of the head's timestamp; 63: lock.
//    The lookup function is root_bucket (batch.hpp), monotone, so bucket b's keys are all
//    below bucket b+1's and a range walks buckets in order (walking the root in index order
//    stands in for the seed's link from a bucket's last node to the next marker: the root never
//    changes, so both reach the same nodes).
//  * Data nodes (640 bytes, 128-byte aligned): a c-object of 32 unsorted keys, one of 32
//    values, then a header of meta (count | next node's count << 8 | next index << 32), ts (the
//    batch epoch that made it) and older (the head this node replaced, when it was made as a
//    head). A bucket is a chain of nodes ordered between nodes (max(A) < min(B) for A -> B),
//    read by a group with slot i holding pair i (coalesced on a warp). Nodes are immutable once
//    published: every update is copy-on-write of the bucket's chain up to the node it changes
//    (path copy; the untouched tail is shared), and the new head carries the version label (ts,
//    older). So the whole bucket has one vCAS object, its word, and the version list of that
//    object is the chain of heads through `older`.
//
// Versioning. The camera is the batch epoch e (the map's count of batches): every head made
// in batch e has ts = e. Range queries of batch e read snapshot s = e - 1: a bucket's version
// at s is the first head on the `older` list with ts <= s (the word's ts bits short-cut the
// common case of a head older than e without reading the node). A head made in batch e links
// straight to the newest head made before e, skipping the heads e made and replaced, so that
// walk is one step however often the batch rewrote the bucket.
//
// Batches, in four passes a driver runs one after the other (the GPU map as kernels, the CPU
// twin as parallel loops over a thread pool):
//  1. the batch's valid updates are sorted by bucket (stable; update_sort_key gives the keys)
//     and applied by update_window: the group whose window of sorted entries holds the start of
//     a bucket's run owns the whole run, and applies it in batch order, a window at a time:
//     lock once, update the node in registers, publish one new node (when the bucket is a
//     single node that stays within 32 pairs; otherwise the requests go one by one through
//     lit_update). A hot bucket is then rewritten once per 32 of its updates on a warp, with no
//     other warp waiting on its lock (Zipfian keys);
//  2. GETs and range counts (batch_window), after every update of the batch;
//  3. an exclusive prefix sum of the counts (the driver's), then range fills (fill_window);
//  4. recycling (recycle_*), after the fills.
// So the updates of one key take effect in batch order, GETs read the state after them, and the
// outcome of a batch does not depend on the processor or the number of threads.
//
// Operations (one group per request; the leader does the vCAS loads, CAS and stores and
// broadcasts, as Algorithms 31 and 32):
//  * GET: load the word (acquire), then the head node's pairs (count from the word, so keys
//    and values come in one round), following `next` while the key is above the node's max.
//    Lock-free; it ignores the lock bit.
//  * INSERT / REMOVE / UPSERT: lock the bucket (CAS of the lock bit into the word: the
//    vCAS-aware lock, at bucket grain rather than the seed's prev + curr pair), walk the
//    chain, and when something changes write the new nodes (a full node splits into two of 17
//    and 16 pairs; a node left empty drops out; an empty bucket keeps an empty head so its
//    version list goes on), then store the new word, which publishes and unlocks at once.
//  * RANGE [a, b]: for each bucket from f(a) to f(b) find its version at s, walk that chain,
//    and count (pass 2) or write (pass 3) the pairs in [a, b]; the slots rank their in-range
//    keys so the output is sorted. Wait-free: the walk is bounded by the chains reachable at
//    s, which no one changes.
//
// Linearizability.
//  * Updates to one bucket are serialised by its lock; an update takes effect at the release
//    store of the word, and reads the chain under the lock, so no update is lost. A failed
//    INSERT / REMOVE takes effect when it read the chain under the lock.
//  * A GET takes effect at its acquire load of the word: the chain it reaches is immutable and
//    is the bucket's content from that store until the next one (the node writes happen
//    before the release store that publishes them; lanes read after the leader's acquire and a
//    group barrier). Since every key lives in exactly one bucket, the map's state at any
//    instant is the set of the buckets' current chains.
//  * Range queries of batch e take effect at the start of batch e: versions labelled < e are
//    exactly the state after batch e - 1 (batches of a map run one at a time), and all writes
//    of batch e are labelled e, so every query reads the same instant, which lies inside every
//    request's interval (all of a batch's requests are pending from the call until it
//    returns). Both range passes read the same versions, so they agree.
//
// Reclamation. A node leaves the newest state when an update of batch e replaces it (retired
// into a list). A reader of batch e can still reach it (following `older` from a head labelled
// e); a reader of batch e + 1 cannot: it stops at the first head labelled <= e, which is a live
// node, and it only follows `older` out of heads made in its own batch, whose `older` was live
// at the start of that batch or made in it. So at the end of batch e, after its range fill
// pass, the retired list moves into the free list, and batch e + 1 allocates from it before
// touching fresh pool nodes. Memory therefore stays bounded by live nodes + nodes replaced in
// one batch.
#pragma once

#include <cstdint>

#include "cods/cods.hpp"
#include "index/lit/batch.hpp"

#if defined(__CUDACC__)
#define DUET_LIT_UNROLL8 _Pragma("unroll 8")
#else
#define DUET_LIT_UNROLL8 _Pragma("GCC unroll 8")
#endif

namespace duet::lit::core {

using cods::Order;

inline constexpr std::uint32_t kNull = 0xFFFFFFFFu;
inline constexpr unsigned kPairs = 32;
inline constexpr std::uint64_t kLockBit = std::uint64_t{1} << 63;
inline constexpr std::uint64_t kTsMask = 0xFFFFFF;

/// A data node: 32 pairs in two c-objects, then the header. Immutable once published.
struct Node {
  cods::CObject<kPairs> keys;
  cods::CObject<kPairs> values;
  std::uint64_t meta;   ///< count | next count << 8 | next index << 32
  std::uint64_t ts;     ///< epoch of the batch that made it
  std::uint64_t older;  ///< head replaced by this one (kNull: none)
  std::uint64_t pad[13];
};
static_assert(sizeof(Node) == 640 && alignof(Node) == 128, "node layout");

/// Pool counters, in the memory the groups run on. free_count is constant during a batch.
struct Pool {
  std::uint64_t free_count;  ///< entries of free_list usable in this batch
  std::uint64_t taken;       ///< entries taken from the top of free_list in this batch
  std::uint64_t bump;        ///< fresh pool nodes handed out (may exceed capacity)
  std::uint64_t retired;     ///< entries of the retired list
  std::uint64_t recycled;    ///< nodes moved from retired to free, ever
  std::uint64_t retries;     ///< requests that got kRetry in this batch
};

/// A map as the groups see it: plain pointers and sizes, copied into kernels by value.
struct View {
  std::uint64_t* buckets;
  Node* nodes;
  std::uint32_t* free_list;
  std::uint32_t* retired;
  Pool* pool;
  std::uint64_t nbuckets, capacity;
  std::uint64_t pmin, width, umin, umax;
};

/// Sets a view's shape (root size, pool size, prediction, universe) from a checked batch
/// configuration; the arrays are the backend's to set. Host code.
template <class Config>
inline void set_shape(View& v, const Config& c, std::uint64_t nbuckets, std::uint64_t capacity) {
  v.nbuckets = nbuckets;
  v.capacity = capacity;
  v.pmin = c.predicted_min;
  v.width = c.bucket_width;
  v.umin = c.universe_min;
  v.umax = c.universe_max;
}

// ------------------------------------------------------------------------ groups and slots

/// The near copy of a node's keys or values: slot i is pair i.
template <class G>
using Frag = cods::Fragment<kPairs, G>;

/// Slots a lane holds: 32 on a CPU thread, 1 on a warp lane.
template <class G>
inline constexpr unsigned kPer = kPairs / G::kSize;

/// The slot of this lane's j-th element (the placement of Fragment<32, G>).
template <class G>
DUET_HD DUET_INLINE unsigned slot_of(const G& g, unsigned j) {
  return g.lane() + j * G::kSize;
}

/// One T per slot, placed as a fragment's elements. All calls are collectives.
template <class T, class G>
struct Slots {
  static_assert(G::kSize == 1 || G::kSize == kPairs, "the batched LIT runs on one CPU thread or a whole warp");
  T e[kPer<G>];

  /// Slot i's value, on every lane (a shuffle on a warp).
  DUET_HD DUET_INLINE T at(const G& g, unsigned i) const {
    if constexpr (G::kSize == 1) {
      return e[i];
    } else {
      return g.shfl(e[0], i);
    }
  }
  /// Sets every slot to v (near memory only).
  DUET_HD DUET_INLINE void fill(T v) {
    DUET_UNROLL
    for (unsigned j = 0; j < kPer<G>; ++j) e[j] = v;
  }
};

/// Bit i set when pred(j, i) holds for slot i (this lane's j-th element). Collective.
template <class G, class Pred>
DUET_HD DUET_INLINE std::uint32_t ballot32(const G& g, Pred pred) {
  if constexpr (G::kSize == 1) {
    std::uint32_t m = 0;
    DUET_UNROLL
    for (unsigned j = 0; j < kPairs; ++j) m |= pred(j, j) ? std::uint32_t{1} << j : 0u;
    return m;
  } else {
    return g.ballot(pred(0u, g.lane()));
  }
}

/// True when pred(j, i) holds for some slot. Collective.
template <class G, class Pred>
DUET_HD DUET_INLINE bool any32(const G& g, Pred pred) {
  if constexpr (G::kSize == 1) {
    return ballot32(g, pred) != 0;
  } else {
    return g.any(pred(0u, g.lane()));
  }
}

/// Index of the lowest set bit (m != 0).
DUET_HD DUET_INLINE unsigned first_bit(std::uint32_t m) {
#if DUET_DEVICE_PASS
  return unsigned(__ffs(int(m)) - 1);
#else
  return unsigned(__builtin_ctz(m));
#endif
}
/// Index of the highest set bit (m != 0).
DUET_HD DUET_INLINE unsigned last_bit(std::uint32_t m) {
#if DUET_DEVICE_PASS
  return unsigned(31 - __clz(int(m)));
#else
  return unsigned(31 - __builtin_clz(m));
#endif
}
/// Number of set bits.
DUET_HD DUET_INLINE unsigned bit_count(std::uint32_t m) {
#if DUET_DEVICE_PASS
  return unsigned(__popc(m));
#else
  return unsigned(__builtin_popcount(m));
#endif
}

/// v of lane (lane ^ off) and of lane (lane - off) (own value when lane < off): the generic
/// form, for any group of lanes; a warp tile uses its own butterfly and up shuffles below.
template <class G>
DUET_HD DUET_INLINE std::uint64_t shfl_xor(const G& g, std::uint64_t v, unsigned off) {
  return g.shfl(v, g.lane() ^ off);
}
template <class G>
DUET_HD DUET_INLINE unsigned shfl_up(const G& g, unsigned v, unsigned off) {
  return g.shfl(v, g.lane() >= off ? g.lane() - off : g.lane());
}
#if defined(__CUDACC__)
__device__ __forceinline__ std::uint64_t shfl_xor(const cods::GpuTile<32>& g, std::uint64_t v, unsigned off) {
  return g.tile.shfl_xor(v, off);
}
__device__ __forceinline__ unsigned shfl_up(const cods::GpuTile<32>& g, unsigned v, unsigned off) {
  return g.tile.shfl_up(v, off);
}
#endif

/// Exclusive prefix sum of the slots' counts (slot i gets the sum over slots below i).
template <class G>
DUET_HD DUET_INLINE Slots<unsigned, G> exclusive_sum(const G& g, const Slots<unsigned, G>& c) {
  Slots<unsigned, G> p;
  if constexpr (G::kSize == 1) {
    unsigned s = 0;
    DUET_UNROLL
    for (unsigned j = 0; j < kPairs; ++j) p.e[j] = s, s += c.e[j];
  } else {
    unsigned pre = c.e[0];
    const unsigned lane = g.lane();
    for (unsigned off = 1; off < kPairs; off <<= 1) {
      const unsigned o = shfl_up(g, pre, off);
      if (lane >= off) pre += o;
    }
    p.e[0] = pre - c.e[0];
  }
  return p;
}

/// Largest key among slots below `count` (0 when none), on every lane.
template <class G>
DUET_HD DUET_INLINE std::uint64_t max_below(const G& g, const Frag<G>& k, unsigned count) {
  std::uint64_t v = 0;
  DUET_UNROLL
  for (unsigned j = 0; j < kPer<G>; ++j) {
    const std::uint64_t x = slot_of(g, j) < count ? k.e[j] : 0;
    v = x > v ? x : v;
  }
  for (unsigned off = G::kSize / 2; off > 0; off >>= 1) {
    const std::uint64_t o = shfl_xor(g, v, off);
    v = o > v ? o : v;
  }
  return v;
}

/// Slots below `count` whose key equals `key`.
template <class G>
DUET_HD DUET_INLINE std::uint32_t match(const G& g, const Frag<G>& k, unsigned count, std::uint64_t key) {
  return ballot32(g, [&](unsigned j, unsigned i) { return i < count && k.e[j] == key; });
}

/// Sets slot s of f to x (near memory only).
template <class G>
DUET_HD DUET_INLINE void put_slot(const G& g, Frag<G>& f, unsigned s, std::uint64_t x) {
  DUET_UNROLL
  for (unsigned j = 0; j < kPer<G>; ++j)
    if (slot_of(g, j) == s) f.e[j] = x;
}

/// Each slot's rank among the slots in `m` (how many of them hold a smaller key).
template <class G>
DUET_HD DUET_INLINE Slots<unsigned, G> ranks_in(const G& g, std::uint32_t m, const Frag<G>& k) {
  Slots<unsigned, G> r;
  r.fill(0);
  DUET_LIT_UNROLL8
  for (unsigned s = 0; s < kPairs; ++s) {
    const std::uint64_t ks = k.broadcast(g, s);
    DUET_UNROLL
    for (unsigned j = 0; j < kPer<G>; ++j) r.e[j] += ((m >> s) & 1u) && ks < k.e[j];
  }
  return r;
}

// ------------------------------------------------------------------------ words and nodes

/// A bucket word's fields: the head node's index, its pair count and its batch label's low bits.
DUET_HD DUET_INLINE std::uint32_t w_head(std::uint64_t w) { return std::uint32_t(w); }
DUET_HD DUET_INLINE unsigned w_count(std::uint64_t w) { return unsigned(w >> 32) & 63u; }
DUET_HD DUET_INLINE std::uint64_t w_ts(std::uint64_t w) { return (w >> 38) & kTsMask; }
/// The unlocked bucket word of a head node made in batch `epoch`.
DUET_HD DUET_INLINE std::uint64_t make_word(std::uint32_t head, unsigned count, std::uint64_t epoch) {
  return std::uint64_t(head) | (std::uint64_t(count) << 32) | ((epoch & kTsMask) << 38);
}
/// A node's meta word: its count and its successor's index and count.
DUET_HD DUET_INLINE std::uint64_t make_meta(unsigned count, std::uint32_t next, unsigned next_count) {
  return std::uint64_t(count) | (std::uint64_t(next_count) << 8) | (std::uint64_t(next) << 32);
}

/// Relaxed single-word load and store of node memory (the elementwise-atomic regime).
DUET_HD DUET_INLINE std::uint64_t ld(const std::uint64_t* p) { return cods::atomic_load(p, Order::relaxed); }
DUET_HD DUET_INLINE void st(std::uint64_t* p, std::uint64_t v) { cods::atomic_store(p, v, Order::relaxed); }

/// The bucket word a group starts from: the empty word (no head) before the first write.
DUET_HD DUET_INLINE std::uint64_t empty_word() { return std::uint64_t(kNull); }

/// The last lane: it loads a node's header while the others load pairs.
template <class G>
inline constexpr unsigned kLastLane = G::kSize - 1;

/// vCAS load by the leader, broadcast; the barrier orders the lanes' node reads after it.
template <class G>
DUET_HD DUET_INLINE std::uint64_t load_word(const G& g, const std::uint64_t* p) {
  std::uint64_t w = 0;
  if (g.is_leader()) w = cods::atomic_load(p, Order::acquire);
  w = g.shfl(w, 0);
  g.sync();
  return w;
}

/// Reads the first `count` pairs of node n into k and v (slots from count on hold 0): a
/// fragment get bounded by the node's count, so an empty slot costs no memory read.
template <class G>
DUET_HD DUET_INLINE void get_pairs(const G& g, const Node& n, unsigned count, Frag<G>& k, Frag<G>& v) {
  DUET_UNROLL
  for (unsigned j = 0; j < kPer<G>; ++j) {
    const unsigned i = slot_of(g, j);
    std::uint64_t kj = 0, vj = 0;
    if (i < count) kj = ld(&n.keys.elem[i]), vj = ld(&n.values.elem[i]);
    k.e[j] = kj;
    v.e[j] = vj;
  }
}

/// A request's outcome, the same on every lane.
struct PointOut {
  BatchStatus status;
  std::uint64_t value;
};

// ---------------------------------------------------------------------------------- GET

/// GET of key: kOk and its value, or kNotFound. Collective; lock-free.
template <class G>
DUET_HD PointOut lit_get(const G& g, const View& v, std::uint64_t key) {
  const std::uint64_t w = load_word(g, &v.buckets[root_bucket(v.pmin, v.width, v.nbuckets, key)]);
  std::uint32_t idx = w_head(w);
  unsigned cnt = w_count(w);
  while (idx != kNull) {
    const Node& n = v.nodes[idx];
    Frag<G> k, val;
    get_pairs(g, n, cnt, k, val);
    std::uint64_t meta = 0;
    if (g.is_leader(kLastLane<G>)) meta = ld(&n.meta);
    const std::uint32_t m = match(g, k, cnt, key);
    if (m) return {BatchStatus::kOk, val.broadcast(g, first_bit(m))};
    meta = g.shfl(meta, kLastLane<G>);
    const std::uint32_t next = std::uint32_t(meta >> 32);
    if (next == kNull) break;
    if (key < max_below(g, k, cnt)) break;  // the key would be in this node
    idx = next;
    cnt = unsigned(meta >> 8) & 63u;
  }
  return {BatchStatus::kNotFound, 0};
}

// ------------------------------------------------------------------------ allocation

/// Nodes reserved for one update: the j-th is free_list[fc - 1 - (i + j)] for j < p0, else
/// bump + (j - p0).
struct Reservation {
  std::uint64_t i, bump, p0, fc;
  DUET_HD DUET_INLINE std::uint32_t at(const View& v, std::uint64_t j) const {
    return j < p0 ? v.free_list[fc - 1 - (i + j)] : std::uint32_t(bump + (j - p0));
  }
};

/// Adds n to a pool counter and returns its old value (relaxed). On the GPU this is atomicAdd
/// on global memory: with cods::atomic_add's generic-address form, ptxas spilled six times as
/// much in update_kernel (2060 against 344 bytes of spill stores, CUDA 13, sm_90).
DUET_HD DUET_INLINE std::uint64_t counter_add(std::uint64_t* p, std::uint64_t n) {
#if DUET_DEVICE_PASS
  return atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(n));
#else
  return cods::atomic_add(p, n, Order::relaxed);
#endif
}

/// Appends node idx to the retired list (free again after the batch). One atomic add.
DUET_HD DUET_INLINE void retire(const View& v, std::uint32_t idx) {
  const std::uint64_t r = counter_add(&v.pool->retired, 1);
  v.retired[r] = idx;
}

/// Leader only: reserves `need` nodes; false (and nothing kept) when the pool is exhausted.
DUET_HD inline bool reserve_nodes(const View& v, std::uint64_t fc, std::uint64_t need, Reservation* r) {
  r->fc = fc;
  r->i = counter_add(&v.pool->taken, need);
  const std::uint64_t from_free = r->i >= fc ? 0 : (fc - r->i < need ? fc - r->i : need);
  r->p0 = from_free;
  const std::uint64_t rest = need - from_free;
  r->bump = rest ? counter_add(&v.pool->bump, rest) : 0;
  if (r->bump + rest <= v.capacity) return true;
  // Give back what was taken: free-list nodes and the fresh ones below capacity go to the
  // retired list (no one can reach them), to be free again next batch.
  for (std::uint64_t j = 0; j < from_free; ++j) retire(v, r->at(v, j));
  for (std::uint64_t b = r->bump; b < v.capacity && b < r->bump + rest; ++b) retire(v, std::uint32_t(b));
  return false;
}

/// Leader: records a request that found the pool exhausted and unlocks its bucket unchanged.
DUET_HD DUET_INLINE void give_up(const View& v, std::uint64_t* bw, std::uint64_t w) {
  counter_add(&v.pool->retries, 1);
  cods::atomic_store(bw, w, Order::release);
}

/// Waits about ns nanoseconds on the GPU, one pause on the CPU (a lock holder's backoff).
DUET_HD DUET_INLINE void backoff_wait(unsigned ns) {
#if DUET_DEVICE_PASS
  __nanosleep(ns);
#else
  (void)ns;
  cods::spin_pause();
#endif
}

/// Locks a bucket (the vCAS-aware lock: the leader CASes the lock bit into the word, backing
/// off while it is set) and returns the word as it was, unlocked, to every lane; the group
/// barrier orders the lanes' node reads after the leader's acquire. Collective.
template <class G>
DUET_HD std::uint64_t lock_bucket(const G& g, std::uint64_t* bw) {
  std::uint64_t w = 0;
  if (g.is_leader()) {
    unsigned backoff = 32;
    for (;;) {
      w = cods::atomic_load(bw, Order::relaxed);
      if (!(w & kLockBit)) {
        std::uint64_t expected = w;
        if (cods::atomic_cas(bw, expected, w | kLockBit, Order::acquire)) break;
      }
      backoff_wait(backoff);
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
  std::uint64_t j = 0;  // nodes emitted
  std::uint32_t prev = kNull, first = kNull;
  unsigned prev_count = 0, first_count = 0;

  /// Leader's reservation, broadcast to the group. Collective.
  template <class G>
  DUET_HD DUET_INLINE void share(const G& g, std::uint64_t fc) {
    res.i = g.shfl(res.i, 0);
    res.bump = g.shfl(res.bump, 0);
    res.p0 = g.shfl(res.p0, 0);
    res.fc = fc;
  }

  /// Collective: slot i < count writes pair i (k, val). Leader links the previous node.
  template <class G>
  DUET_HD void emit(const G& g, const View& v, std::uint64_t epoch, std::uint32_t old_head, unsigned count,
                    const Frag<G>& k, const Frag<G>& val) {
    const std::uint32_t a = res.at(v, j);
    Node& n = v.nodes[a];
    DUET_UNROLL
    for (unsigned jj = 0; jj < kPer<G>; ++jj) {
      const unsigned i = slot_of(g, jj);
      if (i < count) {
        st(&n.keys.elem[i], k.e[jj]);
        st(&n.values.elem[i], val.e[jj]);
      }
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
  template <class G>
  DUET_HD DUET_INLINE void finish(const G& g, const View& v, std::uint32_t tail, unsigned tail_count) {
    if (g.is_leader() && prev != kNull) st(&v.nodes[prev].meta, make_meta(prev_count, tail, tail_count));
  }
};

/// Publishes a new chain: every lane's node writes, then the leader's release store of the new
/// word, which also unlocks the bucket. Collective.
template <class G>
DUET_HD DUET_INLINE void publish(const G& g, std::uint64_t* bw, const Emitter& em, std::uint64_t epoch) {
  cods::fence(Order::release);
  g.sync();
  if (g.is_leader()) cods::atomic_store(bw, make_word(em.first, em.first_count, epoch), Order::release);
}

// ----------------------------------------------------------------- INSERT / REMOVE / UPSERT

/// One update (INSERT, REMOVE or UPSERT of key) under the bucket's lock, by path copy.
/// Collective; every lane passes the same request and gets the same outcome. kRetry, with
/// nothing changed, when the pool cannot supply the nodes.
template <class G>
DUET_HD PointOut lit_update(const G& g, const View& v, std::uint64_t epoch, std::uint64_t fc, BatchOp op,
                            std::uint64_t key, std::uint64_t value) {
  std::uint64_t* bw = &v.buckets[root_bucket(v.pmin, v.width, v.nbuckets, key)];
  const std::uint64_t w = lock_bucket(g, bw);
  const std::uint32_t head = w_head(w);

  // Phase 1: find the target node t (1-based position) and the key's slot in it.
  unsigned t = 0, tcnt = 0, next_cnt = 0;
  std::uint32_t tidx = kNull, next = kNull;
  Frag<G> k, val;
  k.fill(0);
  val.fill(0);
  int slot = -1;
  if (head != kNull) {
    std::uint32_t idx = head;
    unsigned cnt = w_count(w);
    for (t = 1;; ++t) {
      const Node& n = v.nodes[idx];
      get_pairs(g, n, cnt, k, val);
      std::uint64_t meta = 0;
      if (g.is_leader(kLastLane<G>)) meta = ld(&n.meta);
      meta = g.shfl(meta, kLastLane<G>);
      tidx = idx, tcnt = cnt;
      next = std::uint32_t(meta >> 32);
      next_cnt = unsigned(meta >> 8) & 63u;
      const std::uint32_t m = match(g, k, cnt, key);
      if (m) {
        slot = int(first_bit(m));
        break;
      }
      if (next == kNull) break;
      if (key < max_below(g, k, cnt)) break;
      idx = next;
      cnt = next_cnt;
    }
  }
  const bool found = slot >= 0;
  const std::uint64_t present = found ? val.broadcast(g, unsigned(slot)) : 0;
  PointOut out{BatchStatus::kOk, 0};
  unsigned repl = 0;  // replacement nodes for t
  if (found) {
    if (op == BatchOp::kInsert) out = {BatchStatus::kExists, present};
    else if (op == BatchOp::kRemove) out = {BatchStatus::kOk, present}, repl = tcnt > 1 ? 1 : 0;
    else out = {BatchStatus::kUpdated, present}, repl = 1;
  } else {
    if (op == BatchOp::kRemove) out = {BatchStatus::kNotFound, 0};
    else repl = tcnt == kPairs ? 2 : 1;
  }
  const bool changes = (found && op != BatchOp::kInsert) || (!found && op != BatchOp::kRemove);
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
    if (g.is_leader()) give_up(v, bw, w);
    return {BatchStatus::kRetry, 0};
  }
  em.share(g, fc);

  // Copies node (idx, cnt) unchanged into the new chain, retires it, and moves (idx, cnt) on
  // to its successor.
  auto copy_and_advance = [&](std::uint32_t& idx, unsigned& cnt) {
    const Node& n = v.nodes[idx];
    Frag<G> ck, cv;
    get_pairs(g, n, cnt, ck, cv);
    std::uint64_t meta = 0;
    if (g.is_leader(kLastLane<G>)) meta = ld(&n.meta);
    meta = g.shfl(meta, kLastLane<G>);
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
  if (found && op == BatchOp::kRemove) {
    const std::uint64_t lk = k.broadcast(g, tcnt - 1), lv = val.broadcast(g, tcnt - 1);
    put_slot(g, k, unsigned(slot), lk);
    put_slot(g, val, unsigned(slot), lv);
    if (tcnt > 1) em.emit(g, v, epoch, head, tcnt - 1, k, val);
  } else if (found) {  // UPSERT of a present key
    put_slot(g, val, unsigned(slot), value);
    em.emit(g, v, epoch, head, tcnt, k, val);
  } else if (tcnt < kPairs) {  // insert into a node with room (or a new first node)
    put_slot(g, k, tcnt, key);
    put_slot(g, val, tcnt, value);
    em.emit(g, v, epoch, head, tcnt + 1, k, val);
  } else {  // split a full node: the 17 smallest of the 33 keys, then the 16 largest
    Slots<unsigned, G> r = ranks_in(g, 0xFFFFFFFFu, k);
    DUET_UNROLL
    for (unsigned j = 0; j < kPer<G>; ++j) r.e[j] += key < k.e[j] ? 1u : 0u;
    const unsigned rk = bit_count(ballot32(g, [&](unsigned j, unsigned) { return k.e[j] < key; }));
    // Slot q of the lower node must hold the pair of rank q, slot q of the upper one the pair
    // of rank q + 17: gather by rank, the new key at rank rk.
    Frag<G> lo_k, lo_v, hi_k, hi_v;
    lo_k.fill(0), lo_v.fill(0), hi_k.fill(0), hi_v.fill(0);
    for (unsigned src = 0; src < kPairs; ++src) {
      const std::uint64_t sk = k.broadcast(g, src), sv = val.broadcast(g, src);
      const unsigned sr = r.at(g, src);
      DUET_UNROLL
      for (unsigned j = 0; j < kPer<G>; ++j) {
        const unsigned q = slot_of(g, j);
        if (sr == q) lo_k.e[j] = sk, lo_v.e[j] = sv;
        if (sr == q + 17) hi_k.e[j] = sk, hi_v.e[j] = sv;
      }
    }
    DUET_UNROLL
    for (unsigned j = 0; j < kPer<G>; ++j) {
      const unsigned q = slot_of(g, j);
      if (rk == q) lo_k.e[j] = key, lo_v.e[j] = value;
      if (rk == q + 17) hi_k.e[j] = key, hi_v.e[j] = value;
    }
    em.emit(g, v, epoch, head, 17, lo_k, lo_v);
    em.emit(g, v, epoch, head, 16, hi_k, hi_v);
  }
  if (t > 0 && g.is_leader()) retire(v, tidx);
  if (tail_copy) copy_and_advance(tail, tail_count);  // the first node emptied: its successor becomes the head
  if (empty_head) em.emit(g, v, epoch, head, 0, k, val);
  em.finish(g, v, tail, tail_count);
  publish(g, bw, em, epoch);
  return out;
}

// ------------------------------------------------------- updates grouped by bucket

/// A request's outcome written by the lane that holds it.
DUET_HD DUET_INLINE void put(BatchStatus* status, std::uint64_t* out, std::uint64_t i, PointOut o) {
  status[i] = o.status;
  out[i] = o.value;
}

/// Applies the updates held by lanes j..e (all on bucket b, in batch order) under one lock
/// acquisition and one published node, when the bucket is a single node and stays within 32
/// pairs; the rest go one by one through lit_update. The combined requests take effect in
/// lane order at the one release store, so each sees the ones before it. Collective.
template <class G>
DUET_HD void apply_run(const G& g, const View& v, std::uint64_t epoch, std::uint64_t fc, std::uint64_t b, unsigned j,
                       unsigned e, BatchOp op, std::uint64_t key, std::uint64_t value, std::uint64_t ri,
                       BatchStatus* __restrict__ status, std::uint64_t* __restrict__ out) {
  const unsigned lane = g.lane();
  std::uint64_t* bw = &v.buckets[b];
  const std::uint64_t w = lock_bucket(g, bw);
  const std::uint32_t head = w_head(w);
  unsigned count = head == kNull ? 0 : w_count(w);
  Frag<G> k, val;
  k.fill(0);
  val.fill(0);
  std::uint64_t meta = 0;
  if (head != kNull) {
    const Node& n = v.nodes[head];
    get_pairs(g, n, count, k, val);
    if (g.is_leader(kLastLane<G>)) meta = ld(&n.meta);
  }
  meta = g.shfl(meta, kLastLane<G>);
  unsigned r = j;
  bool changed = false;
  if (head == kNull || std::uint32_t(meta >> 32) == kNull) {  // one node (or none): combine
    for (; r <= e; ++r) {
      const BatchOp rop = BatchOp(g.shfl(unsigned(op), r));
      const std::uint64_t rk = g.shfl(key, r), rv = g.shfl(value, r);
      const std::uint32_t m = match(g, k, count, rk);
      const int slot = m ? int(first_bit(m)) : -1;
      const std::uint64_t present = m ? val.broadcast(g, unsigned(slot)) : 0;
      PointOut o{BatchStatus::kOk, 0};
      if (m) {
        if (rop == BatchOp::kInsert) {
          o = {BatchStatus::kExists, present};
        } else if (rop == BatchOp::kRemove) {
          o = {BatchStatus::kOk, present};
          const std::uint64_t lk = k.broadcast(g, count - 1), lv = val.broadcast(g, count - 1);
          put_slot(g, k, unsigned(slot), lk);
          put_slot(g, val, unsigned(slot), lv);
          --count;
          changed = true;
        } else {
          o = {BatchStatus::kUpdated, present};
          put_slot(g, val, unsigned(slot), rv);
          changed = true;
        }
      } else if (rop == BatchOp::kRemove) {
        o = {BatchStatus::kNotFound, 0};
      } else {
        if (count == kPairs) break;  // the node would split: the rest go one by one
        put_slot(g, k, count, rk);
        put_slot(g, val, count, rv);
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
      if (g.is_leader()) give_up(v, bw, w);
      if (lane >= j && lane < r) put(status, out, ri, {BatchStatus::kRetry, 0});
    } else {
      em.share(g, fc);
      em.emit(g, v, epoch, head, count, k, val);
      em.finish(g, v, kNull, 0);
      if (head != kNull && g.is_leader()) retire(v, head);
      publish(g, bw, em, epoch);
    }
  }
  for (; r <= e; ++r) {  // not combined: a chained bucket, or a node that must split
    const BatchOp rop = BatchOp(g.shfl(unsigned(op), r));
    const PointOut o = lit_update(g, v, epoch, fc, rop, g.shfl(key, r), g.shfl(value, r));
    if (lane == r) put(status, out, ri, o);
  }
}

/// One sorted update, as a lane holds it (b = nbuckets: none).
struct SortedUpdate {
  std::uint32_t b;
  std::uint64_t ri, key, value;
  BatchOp op;
};

/// Sort key of request i for pass 1: its bucket when it is a valid update, nbuckets for
/// anything else (GETs and bad requests), so the updates sort first, grouped by bucket.
DUET_HD DUET_INLINE std::uint32_t update_sort_key(const View& v, const BatchOp* __restrict__ ops,
                                                  const std::uint64_t* __restrict__ keys, bool have_values,
                                                  std::uint64_t i) {
  const std::uint8_t op = std::uint8_t(ops[i]);
  const std::uint64_t k = keys[i];
  const bool upd = op >= 1 && op <= 3 && k >= v.umin && k <= v.umax && (op == 2 || have_values);
  return upd ? std::uint32_t(root_bucket(v.pmin, v.width, v.nbuckets, k)) : std::uint32_t(v.nbuckets);
}

/// Sorted entry i as its lane holds it (b = nbuckets past np or for a non-update).
DUET_HD DUET_INLINE SortedUpdate load_update(const View& v, const BatchOp* __restrict__ ops,
                                             const std::uint64_t* __restrict__ keys,
                                             const std::uint64_t* __restrict__ values,
                                             const std::uint32_t* __restrict__ sorted_bucket,
                                             const std::uint32_t* __restrict__ sorted_index, std::uint64_t np,
                                             std::uint64_t i) {
  SortedUpdate u{std::uint32_t(v.nbuckets), 0, 0, 0, BatchOp::kGet};
  if (i < np) {
    u.b = sorted_bucket[i];
    if (u.b < v.nbuckets) {
      u.ri = sorted_index[i];
      u.op = ops[u.ri];
      u.key = keys[u.ri];
      u.value = u.op == BatchOp::kRemove ? 0 : values[u.ri];
    }
  }
  return u;
}

/// Pass 1 over the window of sorted entries [base, base + group size): applies every run of
/// one bucket that starts in it with apply_run, following a run past the window to its end
/// (the groups whose windows a run spills into skip it). So one group owns each bucket for the
/// batch. Returns false when the window holds no update: sorted, none follow, and the caller
/// stops. fc is the pool's free_count at the batch's start. Collective.
template <class G>
DUET_HD DUET_INLINE bool update_window(const G& g, const View& v, std::uint64_t epoch, std::uint64_t fc,
                                       const BatchOp* __restrict__ ops, const std::uint64_t* __restrict__ keys,
                                       const std::uint64_t* __restrict__ values,
                                       const std::uint32_t* __restrict__ sorted_bucket,
                                       const std::uint32_t* __restrict__ sorted_index, std::uint64_t np,
                                       std::uint64_t base, BatchStatus* __restrict__ status,
                                       std::uint64_t* __restrict__ out) {
  constexpr unsigned kW = G::kSize;
  const unsigned lane = g.lane();
  const SortedUpdate u = load_update(v, ops, keys, values, sorted_bucket, sorted_index, np, base + lane);
  const std::uint32_t valid = g.ballot(u.b < v.nbuckets);
  if (!valid) return false;  // sorted: the rest are reads and bad requests
  // Entries of a run that began before this window belong to the group that owns its start.
  const std::uint32_t before = base > 0 ? sorted_bucket[base - 1] : std::uint32_t(v.nbuckets);
  unsigned j = bit_count(g.ballot(u.b == before) & valid);  // sorted: a prefix
  while (j < kW && ((valid >> j) & 1u)) {
    const std::uint32_t bj = g.shfl(u.b, j);
    const std::uint32_t same = g.ballot(u.b == bj) & valid;
    const unsigned e = last_bit(same);  // sorted: the run is lanes j..e
    apply_run(g, v, epoch, fc, bj, j, e, u.op, u.key, u.value, u.ri, status, out);
    if (e == kW - 1) {  // the run may go on past this window: follow it
      for (std::uint64_t pos = base + kW; pos < np; pos += kW) {
        const SortedUpdate w = load_update(v, ops, keys, values, sorted_bucket, sorted_index, np, pos + lane);
        const std::uint32_t more = g.ballot(w.b == bj);
        if (!(more & 1u)) break;
        const unsigned last = last_bit(more);
        apply_run(g, v, epoch, fc, bj, 0, last, w.op, w.key, w.value, w.ri, status, out);
        if (last < kW - 1) break;
      }
    }
    j = e + 1;
  }
  return true;
}

// ---------------------------------------------------------------------------- RANGE

/// What a range walk found: entries counted (or written), and where a cut range resumes.
struct RangeOut {
  std::uint64_t count;
  bool more;
  std::uint64_t resume;
};

/// Emits the in-range keys among the slots' (has, k) in key order: counts them (kFill false)
/// or writes them and their values at ok/ov + r.count (kFill true), stopping at `limit` with
/// `more` and `resume` set. Collective. Returns true when the walk must stop (limit reached).
template <bool kFill, class G>
DUET_HD DUET_INLINE bool emit_sorted(const G& g, RangeOut& r, const bool (&has)[kPer<G>], const Frag<G>& k,
                                     const std::uint64_t* const (&value_at)[kPer<G>], std::uint64_t start,
                                     std::uint64_t end, std::uint64_t limit, std::uint64_t* __restrict__ ok,
                                     std::uint64_t* __restrict__ ov) {
  bool in[kPer<G>];
  DUET_UNROLL
  for (unsigned j = 0; j < kPer<G>; ++j) in[j] = has[j] && k.e[j] >= start && k.e[j] <= end;
  const std::uint32_t m = ballot32(g, [&](unsigned j, unsigned) { return in[j]; });
  if (!m) return false;
  const unsigned c = bit_count(m);
  const Slots<unsigned, G> rank = ranks_in(g, m, k);  // collective: every lane takes part
  if constexpr (kFill) {
    DUET_UNROLL
    for (unsigned j = 0; j < kPer<G>; ++j) {
      if (in[j] && r.count + rank.e[j] < limit) {
        ok[r.count + rank.e[j]] = k.e[j];
        ov[r.count + rank.e[j]] = ld(value_at[j]);
      }
    }
  }
  if (r.count + c > limit) {
    const std::uint32_t first_out = ballot32(g, [&](unsigned j, unsigned) { return in[j] && r.count + rank.e[j] == limit; });
    r.resume = k.broadcast(g, first_bit(first_out));
    r.more = true;
    r.count = limit;
    return true;
  }
  r.count += c;
  return false;
}

/// Walks [start, end] at snapshot `snap`, counting (kFill false) or writing into ok/ov
/// (kFill true) at most `limit` entries in key order. Collective; wait-free.
///
/// The buckets of the range are taken 32 at a time, one per slot, so their words, versions
/// and head-node headers load in parallel on a warp (two dependent rounds for up to 32
/// buckets, not two per bucket). Then the pairs of consecutive head nodes are packed onto the
/// slots, up to 32 pairs per round, and read in one round; a bucket whose chain has more nodes
/// ends its round and its further nodes are walked one by one. Keys of a bucket are below the
/// next bucket's, and within a chain below the next node's, so ranking each round's keys keeps
/// key order.
template <bool kFill, class G>
DUET_HD RangeOut range_walk(const G& g, const View& v, std::uint64_t epoch, std::uint64_t snap, std::uint64_t start,
                            std::uint64_t end, std::uint64_t limit, std::uint64_t* __restrict__ ok,
                            std::uint64_t* __restrict__ ov) {
  RangeOut r{0, false, 0};
  const std::uint64_t b_first = root_bucket(v.pmin, v.width, v.nbuckets, start);
  const std::uint64_t b_end = root_bucket(v.pmin, v.width, v.nbuckets, end);
  for (std::uint64_t b0 = b_first; b0 <= b_end; b0 += kPairs) {
    const unsigned nb = unsigned(b_end - b0 + 1 < kPairs ? b_end - b0 + 1 : kPairs);
    // Round 1 and 2, one bucket per slot: its version at snap, then its head's header.
    Slots<std::uint32_t, G> idx;
    Slots<unsigned, G> cnt;
    Slots<std::uint64_t, G> meta;
    DUET_UNROLL
    for (unsigned j = 0; j < kPer<G>; ++j) {
      const unsigned i = slot_of(g, j);
      std::uint32_t x = kNull;
      unsigned c = 0;
      std::uint64_t m = 0;
      if (i < nb) {
        const std::uint64_t w = cods::atomic_load(&v.buckets[b0 + i], Order::acquire);
        x = w_head(w);
        c = w_count(w);
        if (x != kNull && w_ts(w) == (epoch & kTsMask)) {  // made in this batch: walk back
          for (;;) {
            const Node& n = v.nodes[x];
            if (ld(&n.ts) <= snap) {
              c = unsigned(ld(&n.meta)) & 63u;
              break;
            }
            x = std::uint32_t(ld(&n.older));
            if (x == kNull) break;
          }
        }
        if (x == kNull) c = 0;
        else m = ld(&v.nodes[x].meta);
      }
      idx.e[j] = x;
      cnt.e[j] = c;
      meta.e[j] = m;
    }
    g.sync();  // orders every lane's node reads below after the loads above
    const std::uint32_t chained_mask = ballot32(g, [&](unsigned j, unsigned i) {
      return i < nb && idx.e[j] != kNull && std::uint32_t(meta.e[j] >> 32) != kNull;
    });
    const Slots<unsigned, G> pre = exclusive_sum(g, cnt);
    unsigned js = 0;
    while (js < nb) {
      // This round: buckets js..je, at most 32 pairs, ending at the first chained bucket.
      const unsigned base = pre.at(g, js);
      const std::uint32_t fit_mask = ballot32(g, [&](unsigned j, unsigned i) {
                                       return i >= js && i < nb && pre.e[j] + cnt.e[j] - base <= kPairs;
                                     }) >> js << js;
      // keep only the prefix of consecutive fitting buckets
      unsigned je = js;
      while (je + 1 < nb && ((fit_mask >> (je + 1)) & 1u) && !((chained_mask >> je) & 1u)) ++je;
      // Slot p takes pair (p - pre_b + base) of bucket b's head, for the bucket b it falls in.
      Slots<std::uint32_t, G> my_idx;
      Slots<unsigned, G> my_pair;
      my_idx.fill(kNull);
      my_pair.fill(0);
      for (unsigned b = js; b <= je; ++b) {
        const unsigned pb = pre.at(g, b) - base, cb = cnt.at(g, b);
        const std::uint32_t ib = idx.at(g, b);
        DUET_UNROLL
        for (unsigned j = 0; j < kPer<G>; ++j) {
          const unsigned p = slot_of(g, j);
          if (p >= pb && p < pb + cb) {
            my_idx.e[j] = ib;
            my_pair.e[j] = p - pb;
          }
        }
      }
      Frag<G> k;
      bool has[kPer<G>];
      const std::uint64_t* val[kPer<G>];
      DUET_UNROLL
      for (unsigned j = 0; j < kPer<G>; ++j) {
        has[j] = my_idx.e[j] != kNull;
        k.e[j] = has[j] ? ld(&v.nodes[my_idx.e[j]].keys.elem[my_pair.e[j]]) : 0;
        val[j] = has[j] ? &v.nodes[my_idx.e[j]].values.elem[my_pair.e[j]] : nullptr;
      }
      if (emit_sorted<kFill>(g, r, has, k, val, start, end, limit, ok, ov)) return r;
      if ((chained_mask >> je) & 1u) {  // the rest of bucket je's chain, node by node
        const std::uint64_t m = meta.at(g, je);
        std::uint32_t nidx = std::uint32_t(m >> 32);
        unsigned ncnt = unsigned(m >> 8) & 63u;
        while (nidx != kNull) {
          const Node& n = v.nodes[nidx];
          Frag<G> kk;
          bool h[kPer<G>];
          const std::uint64_t* nv[kPer<G>];
          DUET_UNROLL
          for (unsigned j = 0; j < kPer<G>; ++j) {
            const unsigned i = slot_of(g, j);
            h[j] = i < ncnt;
            kk.e[j] = h[j] ? ld(&n.keys.elem[i]) : 0;
            nv[j] = h[j] ? &n.values.elem[i] : nullptr;
          }
          std::uint64_t mm = 0;
          if (g.is_leader(kLastLane<G>)) mm = ld(&n.meta);
          if (emit_sorted<kFill>(g, r, h, kk, nv, start, end, limit, ok, ov)) return r;
          if (any32(g, [&](unsigned j, unsigned) { return h[j] && kk.e[j] > end; }))
            return r;  // later nodes and buckets hold larger keys
          mm = g.shfl(mm, kLastLane<G>);
          nidx = std::uint32_t(mm >> 32);
          ncnt = unsigned(mm >> 8) & 63u;
        }
      }
      js = je + 1;
    }
  }
  return r;
}

// --------------------------------------------------------------------- passes 2 and 3

/// True when k lies in [universe_min, universe_max].
DUET_HD DUET_INLINE bool in_universe(const View& v, std::uint64_t k) { return k >= v.umin && k <= v.umax; }

/// Pass 2 over items [base, base + group size) of point requests [0, np) and range counts
/// [np, np + nr): each lane takes one item and the group runs them in turn. Updates were
/// applied by pass 1 and are skipped; bad requests get kInvalid. counts, rstatus, more and
/// resume get each range's entry count, status, cut flag and resume key. Collective.
template <class G>
DUET_HD DUET_INLINE void batch_window(const G& g, const View& v, std::uint64_t epoch, const BatchOp* __restrict__ ops,
                                      const std::uint64_t* __restrict__ keys,
                                      const std::uint64_t* __restrict__ values, BatchStatus* __restrict__ status,
                                      std::uint64_t* __restrict__ out, std::uint64_t np,
                                      const std::uint64_t* __restrict__ starts, const std::uint64_t* __restrict__ ends,
                                      std::uint64_t nr, std::uint64_t limit, std::uint64_t* __restrict__ counts,
                                      BatchStatus* __restrict__ rstatus, std::uint8_t* __restrict__ more,
                                      std::uint64_t* __restrict__ resume, std::uint64_t base) {
  const std::uint64_t total = np + nr;
  const std::uint64_t snap = epoch - 1;
  const std::uint64_t i = base + g.lane();
  std::uint8_t op = 0;
  std::uint64_t a = 0, c = 0;
  bool bad = false;
  if (i < np) {
    op = std::uint8_t(ops[i]);
    a = keys[i];
    bad = op > 3 || !in_universe(v, a);
    if (!bad && (op == std::uint8_t(BatchOp::kInsert) || op == std::uint8_t(BatchOp::kUpsert))) {
      if (values) c = values[i];
      else bad = true;
    }
  } else if (i < total) {
    a = starts[i - np];
    c = ends[i - np];
    bad = a > c || !in_universe(v, a) || !in_universe(v, c);
  }
  const unsigned n = unsigned(total - base < G::kSize ? total - base : G::kSize);
  for (unsigned r = 0; r < n; ++r) {
    const std::uint64_t item = base + r;
    const bool rb = g.shfl(bad, r);
    const std::uint64_t ra = g.shfl(a, r), rc = g.shfl(c, r);
    if (item < np) {
      const BatchOp rop = BatchOp(g.shfl(unsigned(op), r));
      if (!rb && rop != BatchOp::kGet) continue;  // applied by pass 1
      PointOut o{BatchStatus::kInvalid, 0};
      if (!rb) o = lit_get(g, v, ra);
      if (g.lane() == r) status[item] = o.status, out[item] = o.value;
    } else {
      RangeOut o{0, false, 0};
      if (!rb) o = range_walk<false>(g, v, epoch, snap, ra, rc, limit, nullptr, nullptr);
      if (g.lane() == r) {
        const std::uint64_t q = item - np;
        counts[q] = o.count;
        rstatus[q] = rb ? BatchStatus::kInvalid : BatchStatus::kOk;
        more[q] = o.more ? 1 : 0;
        resume[q] = o.resume;
      }
    }
  }
}

/// Pass 3 over queries [base, base + group size): writes each valid query's entries at its
/// offset (offsets: the exclusive prefix sums of pass 2's counts). Collective.
template <class G>
DUET_HD DUET_INLINE void fill_window(const G& g, const View& v, std::uint64_t epoch,
                                     const std::uint64_t* __restrict__ starts, const std::uint64_t* __restrict__ ends,
                                     std::uint64_t nr, std::uint64_t limit, const BatchStatus* __restrict__ rstatus,
                                     const std::uint64_t* __restrict__ offsets, std::uint64_t* __restrict__ okeys,
                                     std::uint64_t* __restrict__ ovals, std::uint64_t base) {
  const std::uint64_t i = base + g.lane();
  std::uint64_t a = 0, c = 0, off = 0;
  bool run = false;
  if (i < nr) {
    run = rstatus[i] == BatchStatus::kOk && offsets[i + 1] > offsets[i];
    a = starts[i], c = ends[i], off = offsets[i];
  }
  const unsigned n = unsigned(nr - base < G::kSize ? nr - base : G::kSize);
  for (unsigned r = 0; r < n; ++r) {
    if (!g.shfl(run, r)) continue;
    const std::uint64_t o = g.shfl(off, r);
    range_walk<true>(g, v, epoch, epoch - 1, g.shfl(a, r), g.shfl(c, r), limit, okeys + o, ovals + o);
  }
}

// ------------------------------------------------------------------------ pass 4

/// Where recycled nodes go in the free list: after its entries this batch did not take.
DUET_HD DUET_INLINE std::uint64_t recycle_base(const Pool& p) {
  return p.free_count - (p.taken < p.free_count ? p.taken : p.free_count);
}
/// Pass 4, step 1 for retired entry i (i < p.retired): appends it to the free list.
DUET_HD DUET_INLINE void recycle_one(const View& v, std::uint64_t base, std::uint64_t i) {
  v.free_list[base + i] = v.retired[i];
}
/// Pass 4, step 2, after step 1 for every retired entry: the counters for the next batch.
DUET_HD DUET_INLINE void recycle_finish(Pool* p) {
  const std::uint64_t remaining = recycle_base(*p);
  p->free_count = remaining + p->retired;
  p->recycled += p->retired;
  p->taken = 0;
  p->retired = 0;
  p->retries = 0;
}

}  // namespace duet::lit::core

#undef DUET_LIT_UNROLL8
