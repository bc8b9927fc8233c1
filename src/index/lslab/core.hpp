// L-Slab's algorithm, written once against CODS and compiled for both processors.
//
// Layout (dissertation 2.5.1, adapted): a bucket is a chain of slabs. A slab of width W holds
// two c-objects of W words each: `keys` = W-2 keys, then the bucket's lock word (used in the
// head slab only), then the next-slab index; `values` = the W-2 values in the same slot order.
// Keys are packed together so a group reads them in one coalesced access; the value is read
// only after a key matched. Putting the lock in the key line saves one memory transaction per
// operation against a separate lock array.
//
// Concurrency: a per-bucket reader-writer lock word [version:32 | readers:31 | writer:1].
// PUT and DELETE take it exclusively through the group's leader; GET either reads without
// locking and validates the version afterwards (ReadPolicy::kOptimistic: no lock word is
// written, but a reader waits while a writer holds the bucket), or takes the shared lock
// (ReadPolicy::kShared, the seed's behaviour). Readers and writers can starve each other on a
// bucket under sustained contention; nothing deadlocks. The 32-bit version and the free
// lists' 32-bit tags wrap; a wrap could fool a validation only if 2^32 writes hit one bucket
// (or stripe) within one read, which takes minutes.
//
// Memory: head slabs are one array; overflow slabs come from a pool of fixed-size chunks
// addressed by 32-bit indices. A group takes a slab from a striped free list (tagged Treiber
// stacks, ABA-safe) or, failing that, from fresh memory with a bump pointer bounded by the
// committed capacity. When both are empty the operation reports OpStatus::kRetry and changes
// nothing; the driver grows the pool and runs it again. An overflow slab emptied by DELETE
// is unlinked and pushed to a free list; pool memory is never returned while the map lives,
// so an optimistic reader that strays into a recycled slab reads valid memory and then fails
// its validation.
#pragma once

#include <cstdint>
#include <vector>

#include "cods/cods.hpp"
#include "index/lslab/types.hpp"

namespace duet::lslab {

inline constexpr std::uint32_t kNullSlab = 0xFFFFFFFFu;
inline constexpr unsigned kFreeStripes = 64;
inline constexpr unsigned kMaxChunks = 1u << 16;

/// Lock word bits.
inline constexpr std::uint64_t kWriterBit = 1;
inline constexpr std::uint64_t kReaderUnit = 2;
inline constexpr std::uint64_t kLowMask = 0xFFFFFFFFull;  // writer bit + reader count
inline constexpr std::uint64_t kVersionUnit = 1ull << 32;

/// One slab of width W (W = 8, 16 or 32): 2 * W * 8 bytes.
template <unsigned W>
struct Slab {
  static constexpr unsigned kKeySlots = W - 2;
  static constexpr unsigned kLockSlot = W - 2;
  static constexpr unsigned kNextSlot = W - 1;
  static constexpr cods::ElementMask kKeyMask = (cods::ElementMask(1) << kKeySlots) - 1;
  cods::CObject<W> keys;
  cods::CObject<W> values;
};

/// Makes s an empty head slab: every key slot empty, lock free at version 0, no next slab.
/// Plain stores: only before the map is shared.
template <unsigned W>
DUET_HD DUET_INLINE void init_head_slab(Slab<W>& s) {
  for (unsigned i = 0; i < W; ++i) {
    s.keys.elem[i] = kReservedKey;
    s.values.elem[i] = 0;
  }
  s.keys.elem[Slab<W>::kLockSlot] = 0;
  s.keys.elem[Slab<W>::kNextSlot] = kNullSlab;
}

/// 64-bit finaliser of MurmurHash3: a bijection that spreads every input bit over the output.
DUET_HD DUET_INLINE std::uint64_t mix64(std::uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  k ^= k >> 33;
  return k;
}

/// Maps a hash uniformly onto [0, n) with a multiply instead of a division.
DUET_HD DUET_INLINE std::uint64_t reduce_range(std::uint64_t h, std::uint64_t n) {
#if DUET_DEVICE_PASS
  return __umul64hi(h, n);
#else
  return static_cast<std::uint64_t>((static_cast<unsigned __int128>(h) * n) >> 64);
#endif
}

/// One free list: a tagged stack head [tag:32 | slab index:32] and the number of slabs on it,
/// alone in a 32-byte sector so that frees and allocations on different stripes never queue
/// on one atomic unit (a single shared counter did, and made DELETE slow where it frees often).
struct alignas(32) FreeStripe {
  std::uint64_t head;
  std::uint64_t count;
};

/// The pool's shared state, in memory both the driver and the groups can reach.
struct PoolCounters {
  /// Next never-used slab index. Passes capacity only while a taker that found the pool used up
  /// is between its add and its subtract (alloc_slab): read it through handed_out().
  std::uint64_t fresh_next;
  std::uint64_t capacity;    ///< slabs committed in chunks
  std::uint64_t retries;     ///< operations that found the pool empty (reset per batch)
  FreeStripe stripes[kFreeStripes];

  /// Sets every free list empty (host side, before first use).
  void clear_free_lists() {
    for (auto& st : stripes) st = {kNullSlab, 0};
  }
  /// Fresh slabs taken so far: indices below it have been handed out (host side, any time).
  std::uint64_t handed_out() const {
    const std::uint64_t f = cods::atomic_load(&fresh_next, cods::Order::acquire);
    const std::uint64_t c = cods::atomic_load(&capacity, cods::Order::acquire);
    return f < c ? f : c;
  }
  /// Slabs on all free lists (host side, for statistics).
  std::uint64_t free_slabs() const {
    std::uint64_t n = 0;
    for (const auto& st : stripes) n += cods::atomic_load(&st.count, cods::Order::relaxed);
    return n;
  }
};

/// A view of a map that a group operates on: plain pointers, copied into kernels by value.
template <unsigned W>
struct MapView {
  Slab<W>* heads = nullptr;
  std::uint64_t buckets = 0;
  Slab<W>* const* chunks = nullptr;  ///< kMaxChunks entries; null past the committed ones
  unsigned chunk_shift = 0;          ///< slabs per chunk = 1 << chunk_shift
  PoolCounters* pool = nullptr;
  ReadPolicy read_policy = ReadPolicy::kOptimistic;

  DUET_HD DUET_INLINE std::uint64_t bucket_of(std::uint64_t key) const { return reduce_range(mix64(key), buckets); }
  DUET_HD DUET_INLINE Slab<W>* head_of(std::uint64_t key) const { return heads + bucket_of(key); }

  /// The slab with pool index idx, or null for an index outside the committed pool (which an
  /// optimistic reader can meet only in a slab that is being changed under it).
  DUET_HD DUET_INLINE Slab<W>* resolve(std::uint64_t idx) const {
    if (idx >= cods::atomic_load(&pool->capacity, cods::Order::acquire)) return nullptr;
    Slab<W>* chunk = chunks[idx >> chunk_shift];
    return chunk ? chunk + (idx & ((std::uint64_t(1) << chunk_shift) - 1)) : nullptr;
  }
};

/// Result of one operation, identical on every lane of the group.
struct OpResult {
  OpStatus status;
  std::uint64_t value;
};

namespace detail {

template <class Group>
DUET_HD DUET_INLINE std::uint64_t leader_load(const Group& g, const std::uint64_t* p, cods::Order o) {
  std::uint64_t v = 0;
  if (g.is_leader()) v = cods::atomic_load(p, o);
  return g.shfl(v, 0);
}

template <class Group>
DUET_HD DUET_INLINE void write_lock(const Group& g, std::uint64_t* lock) {
  if (g.is_leader()) {
    for (;;) {
      std::uint64_t w = cods::atomic_load(lock, cods::Order::relaxed);
      if ((w & kLowMask) == 0 && cods::atomic_cas(lock, w, w | kWriterBit, cods::Order::acquire)) break;
      cods::spin_pause();
    }
  }
  g.sync();
  // Sequence-lock rule: the writer bit is ordered before every store of the critical section,
  // so an optimistic reader that sees any of them also sees the bucket as changed.
  cods::fence(cods::Order::release);
}

template <class Group>
DUET_HD DUET_INLINE void write_unlock(const Group& g, std::uint64_t* lock) {
  cods::fence(cods::Order::release);
  g.sync();
  if (g.is_leader()) cods::atomic_add(lock, kVersionUnit - kWriterBit, cods::Order::release);
  g.sync();
}

template <class Group>
DUET_HD DUET_INLINE void read_lock(const Group& g, std::uint64_t* lock) {
  if (g.is_leader()) {
    for (;;) {
      const std::uint64_t w = cods::atomic_add(lock, kReaderUnit, cods::Order::acquire);
      if (!(w & kWriterBit)) break;
      cods::atomic_add(lock, ~kReaderUnit + 1, cods::Order::relaxed);
      while (cods::atomic_load(lock, cods::Order::relaxed) & kWriterBit) cods::spin_pause();
    }
  }
  g.sync();
}

template <class Group>
DUET_HD DUET_INLINE void read_unlock(const Group& g, std::uint64_t* lock) {
  g.sync();
  if (g.is_leader()) cods::atomic_add(lock, ~kReaderUnit + 1, cods::Order::release);
}

/// Pops a slab from free list `st`, or returns kNullSlab when it is empty. Leader only.
template <unsigned W>
DUET_HD DUET_INLINE std::uint64_t pop_free(const MapView<W>& m, FreeStripe& st) {
  std::uint64_t h = cods::atomic_load(&st.head, cods::Order::acquire);
  while ((h & kLowMask) != kNullSlab) {
    const std::uint64_t idx = h & kLowMask;
    Slab<W>* s = m.resolve(idx);
    const std::uint64_t next =
        s ? (s->keys.load(Slab<W>::kNextSlot, cods::Order::relaxed) & kLowMask) : std::uint64_t(kNullSlab);
    if (cods::atomic_cas(&st.head, h, ((h >> 32) + 1) << 32 | next, cods::Order::acq_rel)) {
      cods::atomic_add(&st.count, ~std::uint64_t(0), cods::Order::relaxed);
      return idx;
    }
  }
  return kNullSlab;
}

/// Takes a slab for the group: from free list `stripe` or its next few neighbours, else from
/// fresh memory, else from any free list. Returns the index to every lane, or kNullSlab when
/// the pool is exhausted.
template <class Group, unsigned W>
DUET_HD DUET_INLINE std::uint32_t alloc_slab(const Group& g, const MapView<W>& m, unsigned stripe) {
  constexpr unsigned kNearStripes = 4;
  std::uint64_t got = kNullSlab;
  if (g.is_leader()) {
    PoolCounters* p = m.pool;
    for (unsigned s = 0; s < kNearStripes && got == kNullSlab; ++s)
      got = pop_free(m, p->stripes[(stripe + s) % kFreeStripes]);
    if (got == kNullSlab) {
#if DUET_DEVICE_PASS
      const std::uint64_t cap = cods::atomic_load(&p->capacity, cods::Order::acquire);
      // On the GPU one fetch-and-add, not a compare-and-swap loop: thousands of groups take fresh
      // slabs at once in a batch of inserts, and a CAS loop let one in per round, so a batch's
      // allocation cost grew with the square of its new slabs (TPC-C's order lines: 0.2 ms at 45
      // new slabs, 51 ms at 14,000; docs/lslab.md). A taker that finds the pool used up gives its
      // ticket back: the counter exceeds capacity only between such a taker's add and subtract,
      // so no index below capacity is handed out twice. That needs capacity fixed while a kernel
      // runs, which the driver guarantees (it grows the pool between launches only).
      if (cods::atomic_load(&p->fresh_next, cods::Order::relaxed) < cap) {
        const std::uint64_t f = cods::atomic_add(&p->fresh_next, 1, cods::Order::acq_rel);
        if (f < cap) got = f;
        else cods::atomic_add(&p->fresh_next, ~std::uint64_t(0), cods::Order::relaxed);  // minus one
      }
#else
      // On the CPU the pool grows while other threads take slabs, which the ticket scheme above
      // cannot allow; a handful of threads contend little on the CAS.
      std::uint64_t f = cods::atomic_load(&p->fresh_next, cods::Order::relaxed);
      while (f < cods::atomic_load(&p->capacity, cods::Order::acquire)) {
        if (cods::atomic_cas(&p->fresh_next, f, f + 1, cods::Order::acq_rel)) {
          got = f;
          break;
        }
      }
#endif
    }
    // Fresh memory is used up: look at every free list before reporting exhaustion.
    for (unsigned s = kNearStripes; s < kFreeStripes && got == kNullSlab; ++s)
      got = pop_free(m, p->stripes[(stripe + s) % kFreeStripes]);
  }
  return static_cast<std::uint32_t>(g.shfl(got, 0));
}

/// Returns slab idx to the free list of `stripe`. The slab must be unreachable from any bucket.
template <class Group, unsigned W>
DUET_HD DUET_INLINE void free_slab(const Group& g, const MapView<W>& m, std::uint32_t idx, unsigned stripe) {
  if (g.is_leader()) {
    Slab<W>* s = m.resolve(idx);
    FreeStripe& st = m.pool->stripes[stripe % kFreeStripes];
    std::uint64_t h = cods::atomic_load(&st.head, cods::Order::relaxed);
    for (;;) {
      s->keys.store(Slab<W>::kNextSlot, h & kLowMask, cods::Order::relaxed);
      const std::uint64_t nh = ((h >> 32) + 1) << 32 | idx;
      if (cods::atomic_cas(&st.head, h, nh, cods::Order::acq_rel)) break;
    }
    cods::atomic_add(&st.count, 1, cods::Order::relaxed);
  }
  g.sync();
}

/// Searches a bucket's chain for key. Returns true when found, with the slab and slot; `last`
/// is the chain's final slab, `empty_slab`/`empty_slot` the first free slot met (if any).
/// Used under the bucket's lock (exclusive or shared), so the chain cannot change.
template <class Group, unsigned W>
struct ChainWalk {
  Slab<W>* slab = nullptr;
  int slot = -1;
  Slab<W>* prev = nullptr;
  Slab<W>* last = nullptr;
  std::uint32_t slab_index = kNullSlab;  ///< pool index of `slab` (kNullSlab for the head)
  Slab<W>* empty_slab = nullptr;
  int empty_slot = -1;
  cods::Fragment<W, Group> frag;         ///< keys of `slab` (or of `last` when not found)
};

template <class Group, unsigned W>
DUET_HD DUET_INLINE bool walk_locked(const Group& g, const MapView<W>& m, Slab<W>* head, std::uint64_t key,
                                     ChainWalk<Group, W>& w) {
  using S = Slab<W>;
  Slab<W>* slab = head;
  Slab<W>* prev = nullptr;
  std::uint32_t idx = kNullSlab;
  for (;;) {
    w.frag.get(g, slab->keys);
    const int slot = w.frag.find(g, key, S::kKeyMask);
    if (slot >= 0) {
      w.slab = slab;
      w.slot = slot;
      w.prev = prev;
      w.slab_index = idx;
      return true;
    }
    if (!w.empty_slab) {
      const int e = w.frag.find(g, kReservedKey, S::kKeyMask);
      if (e >= 0) {
        w.empty_slab = slab;
        w.empty_slot = e;
      }
    }
    const std::uint64_t next = w.frag.broadcast(g, S::kNextSlot) & kLowMask;
    if (next == kNullSlab) {
      w.last = slab;
      return false;
    }
    prev = slab;
    idx = static_cast<std::uint32_t>(next);
    slab = m.resolve(next);
  }
}

/// The lock word's version and writer bit: what an optimistic reader validates.
inline constexpr std::uint64_t kStableBits = ~(kLowMask - kWriterBit);

/// Searches a bucket's chain without any lock. The caller validates the bucket's version
/// (`v1`, read with acquire before the call) afterwards; on a long chain the version is
/// rechecked every 64 slabs so a chain changed under the search cannot hold it.
template <class Group, unsigned W>
DUET_HD DUET_INLINE OpResult search_unlocked(const Group& g, const MapView<W>& m, Slab<W>* head,
                                             std::uint64_t key, std::uint64_t v1) {
  using S = Slab<W>;
  const std::uint64_t* lock = &head->keys.elem[S::kLockSlot];
  S* slab = head;
  cods::Fragment<W, Group> frag;
  for (unsigned hops = 0; slab != nullptr; ++hops) {
    frag.get(g, slab->keys);
    const int slot = frag.find(g, key, S::kKeyMask);
    if (slot >= 0) return {OpStatus::kFound, slab->values.load(static_cast<unsigned>(slot), cods::Order::relaxed)};
    const std::uint64_t next = frag.broadcast(g, S::kNextSlot) & kLowMask;
    if (next == kNullSlab) break;
    if ((hops & 63) == 63 && (leader_load(g, lock, cods::Order::acquire) & kStableBits) != v1) break;
    slab = m.resolve(next);
  }
  return {OpStatus::kNotFound, 0};
}

/// PUT's body; the caller holds the bucket's lock exclusively.
template <class Group, unsigned W>
DUET_HD OpResult put_locked(const Group& g, const MapView<W>& m, std::uint64_t bucket, std::uint64_t key,
                            std::uint64_t value) {
  using S = Slab<W>;
  S* head = m.heads + bucket;
  ChainWalk<Group, W> w;
  if (walk_locked(g, m, head, key, w)) {
    std::uint64_t old = 0;
    if (g.is_leader()) old = w.slab->values.exchange_exclusive(static_cast<unsigned>(w.slot), value);
    return {OpStatus::kFound, g.shfl(old, 0)};
  }
  if (w.empty_slab) {
    if (g.is_leader()) {
      w.empty_slab->values.store(static_cast<unsigned>(w.empty_slot), value, cods::Order::relaxed);
      w.empty_slab->keys.store(static_cast<unsigned>(w.empty_slot), key, cods::Order::relaxed);
    }
    return {OpStatus::kNotFound, 0};
  }
  const std::uint32_t idx = alloc_slab(g, m, static_cast<unsigned>(bucket % kFreeStripes));
  if (idx == kNullSlab) {
    if (g.is_leader()) cods::atomic_add(&m.pool->retries, 1, cods::Order::relaxed);
    return {OpStatus::kRetry, 0};
  }
  S* fresh = m.resolve(idx);
  // Build the new slab in near memory, holding key in slot 0, then publish it with one set.
  cods::Fragment<W, Group> keys, vals;
  keys.fill(kReservedKey);
  vals.fill(0);
  DUET_UNROLL
  for (unsigned j = 0; j < keys.kPerLane; ++j) {
    const unsigned i = keys.index(g, j);
    if (i == 0) keys.e[j] = key, vals.e[j] = value;
    if (i == S::kNextSlot) keys.e[j] = kNullSlab;
    if (i == S::kLockSlot) keys.e[j] = 0;
  }
  keys.set(g, fresh->keys);
  vals.set(g, fresh->values);
  cods::fence(cods::Order::release);
  g.sync();
  if (g.is_leader()) w.last->keys.store(S::kNextSlot, idx, cods::Order::release);
  return {OpStatus::kNotFound, 0};
}

/// DELETE's body; the caller holds the bucket's lock exclusively. An overflow slab left empty
/// is unlinked and returned to the pool.
template <class Group, unsigned W>
DUET_HD OpResult delete_locked(const Group& g, const MapView<W>& m, std::uint64_t bucket, std::uint64_t key) {
  using S = Slab<W>;
  ChainWalk<Group, W> w;
  if (!walk_locked(g, m, m.heads + bucket, key, w)) return {OpStatus::kNotFound, 0};
  std::uint64_t old = 0;
  if (g.is_leader()) {
    old = w.slab->values.exchange_exclusive(static_cast<unsigned>(w.slot), 0);
    w.slab->keys.store(static_cast<unsigned>(w.slot), kReservedKey, cods::Order::relaxed);
  }
  // Keys still in this slab other than the one just removed.
  const int remaining = S::kKeySlots - w.frag.count(g, kReservedKey, S::kKeyMask) - 1;
  if (w.prev != nullptr && remaining == 0) {
    const std::uint64_t next = w.frag.broadcast(g, S::kNextSlot);
    if (g.is_leader()) w.prev->keys.store(S::kNextSlot, next, cods::Order::release);
    g.sync();
    free_slab(g, m, w.slab_index, static_cast<unsigned>(bucket % kFreeStripes));
  }
  return {OpStatus::kFound, g.shfl(old, 0)};
}

DUET_HD DUET_INLINE bool known_op(Op op) { return op == Op::kGet || op == Op::kPut || op == Op::kDelete; }

}  // namespace detail

/// GET: every lane passes the same key; the value (if found) is returned to every lane.
/// Costs one coalesced key read per slab of the chain plus one value read on a hit.
template <class Group, unsigned W>
DUET_HD OpResult lslab_get(const Group& g, const MapView<W>& m, std::uint64_t key) {
  using S = Slab<W>;
  if (key == kReservedKey) return {OpStatus::kInvalid, 0};
  S* head = m.head_of(key);
  std::uint64_t* lock = &head->keys.elem[S::kLockSlot];
  if (m.read_policy == ReadPolicy::kOptimistic) {
    for (int attempt = 0; attempt < 64; ++attempt) {
      const std::uint64_t v1 = detail::leader_load(g, lock, cods::Order::acquire) & detail::kStableBits;
      if (v1 & kWriterBit) {
        cods::spin_pause();
        continue;
      }
      cods::fence(cods::Order::acquire);  // every lane's loads come after the leader's v1
      const OpResult r = detail::search_unlocked(g, m, head, key, v1);
      cods::fence(cods::Order::acquire);
      g.sync();  // every lane's loads are done before the leader re-reads the version
      const std::uint64_t v2 = detail::leader_load(g, lock, cods::Order::relaxed) & detail::kStableBits;
      if (v2 == v1) return r;
    }
    // Persistent contention: fall back to the reader lock, which always completes.
  }
  detail::read_lock(g, lock);
  detail::ChainWalk<Group, W> w;
  OpResult r{OpStatus::kNotFound, 0};
  if (detail::walk_locked(g, m, head, key, w))
    r = {OpStatus::kFound, w.slab->values.load(static_cast<unsigned>(w.slot), cods::Order::relaxed)};
  detail::read_unlock(g, lock);
  return r;
}

/// PUT: inserts or overwrites key; returns the previous value (kFound) or kNotFound.
/// Returns kRetry, having changed nothing, when a new slab was needed and the pool is empty.
template <class Group, unsigned W>
DUET_HD OpResult lslab_put(const Group& g, const MapView<W>& m, std::uint64_t key, std::uint64_t value) {
  if (key == kReservedKey) return {OpStatus::kInvalid, 0};
  const std::uint64_t bucket = m.bucket_of(key);
  std::uint64_t* lock = &m.heads[bucket].keys.elem[Slab<W>::kLockSlot];
  detail::write_lock(g, lock);
  const OpResult r = detail::put_locked(g, m, bucket, key, value);
  detail::write_unlock(g, lock);
  return r;
}

/// DELETE: removes key; returns the previous value (kFound) or kNotFound.
template <class Group, unsigned W>
DUET_HD OpResult lslab_delete(const Group& g, const MapView<W>& m, std::uint64_t key) {
  if (key == kReservedKey) return {OpStatus::kInvalid, 0};
  const std::uint64_t bucket = m.bucket_of(key);
  std::uint64_t* lock = &m.heads[bucket].keys.elem[Slab<W>::kLockSlot];
  detail::write_lock(g, lock);
  const OpResult r = detail::delete_locked(g, m, bucket, key);
  detail::write_unlock(g, lock);
  return r;
}

/// Runs one request of any kind, the whole group together; an unknown op code gives kInvalid.
template <class Group, unsigned W>
DUET_HD DUET_INLINE OpResult lslab_execute(const Group& g, const MapView<W>& m, Op op, std::uint64_t key,
                                            std::uint64_t value) {
  switch (op) {
    case Op::kGet: return lslab_get(g, m, key);
    case Op::kPut: return lslab_put(g, m, key, value);
    case Op::kDelete: return lslab_delete(g, m, key);
  }
  return {OpStatus::kInvalid, 0};
}

/// Runs up to one request per lane (lane i's request when `mine`). Each request takes effect
/// atomically, the group's requests in some serial order (requests on one bucket need not keep
/// lane order), with the slow steps done for all lanes at once:
///
///  A. every lane takes its bucket's lock (PUT, DELETE: one try) or reads its bucket's version
///     (optimistic GET), in parallel: one memory round trip for the group instead of one per
///     request;
///  B. the group runs the bodies of the requests that succeeded in A, one after another;
///  C. every lane releases its lock or validates its read, in parallel;
///  D. requests that found their bucket busy in A, or failed validation in C, run alone with
///     lslab_execute, which waits for locks. No lock is held while waiting, so no deadlock.
///
/// Returns each lane's own outcome (unspecified for lanes with mine == false).
template <class Group, unsigned W>
DUET_HD OpResult lslab_execute_group(const Group& g, const MapView<W>& m, bool mine, Op op, std::uint64_t key,
                                     std::uint64_t value) {
  using S = Slab<W>;
  OpResult res{OpStatus::kInvalid, 0};
  const bool valid = mine && key != kReservedKey && detail::known_op(op);
  const std::uint64_t bucket = valid ? m.bucket_of(key) : 0;
  std::uint64_t* lock = &m.heads[bucket].keys.elem[S::kLockSlot];
  const bool is_read = op == Op::kGet;
  // A: take locks, read versions.
  bool fast = false;
  std::uint64_t v1 = 0;
  if (valid) {
    if (!is_read) {
      std::uint64_t w = cods::atomic_load(lock, cods::Order::relaxed);
      fast = (w & kLowMask) == 0 && cods::atomic_cas(lock, w, w | kWriterBit, cods::Order::acquire);
    } else if (m.read_policy == ReadPolicy::kOptimistic) {
      v1 = cods::atomic_load(lock, cods::Order::acquire) & detail::kStableBits;
      fast = !(v1 & kWriterBit);
    }
  }
  // Sequence-lock rule across lanes: each lock taken (or version read) is ordered before any
  // access of the bodies, which the group's leader may perform on another lane's behalf: the
  // barrier carries the owner's CAS or load to every lane, and each lane's fence then orders
  // its own later loads and stores after it.
  g.sync();
  cods::fence(cods::Order::acq_rel);
  // B: bodies, one request at a time.
  for (std::uint32_t todo = g.ballot(fast); todo != 0; todo &= todo - 1) {
    const unsigned owner = cods::lowest_bit(todo);
    const Op o = static_cast<Op>(g.shfl(static_cast<std::uint32_t>(op), owner));
    const std::uint64_t k = g.shfl(key, owner);
    const std::uint64_t b = g.shfl(bucket, owner);
    OpResult r;
    if (o == Op::kGet) r = detail::search_unlocked(g, m, m.heads + b, k, g.shfl(v1, owner));
    else if (o == Op::kPut) r = detail::put_locked(g, m, b, k, g.shfl(value, owner));
    else r = detail::delete_locked(g, m, b, k);
    if (g.lane() == owner) res = r;
  }
  // C: release locks, validate reads. (Releasing each lock right after its body instead was
  // measured slower on an H200: docs/lslab.md.)
  cods::fence(cods::Order::acq_rel);
  g.sync();
  if (fast && !is_read) cods::atomic_add(lock, kVersionUnit - kWriterBit, cods::Order::release);
  if (fast && is_read) fast = (cods::atomic_load(lock, cods::Order::relaxed) & detail::kStableBits) == v1;
  // D: the rest, alone.
  for (std::uint32_t todo = g.ballot(valid && !fast); todo != 0; todo &= todo - 1) {
    const unsigned owner = cods::lowest_bit(todo);
    const OpResult r = lslab_execute(g, m, static_cast<Op>(g.shfl(static_cast<std::uint32_t>(op), owner)),
                                     g.shfl(key, owner), g.shfl(value, owner));
    if (g.lane() == owner) res = r;
  }
  return res;
}

/// Host-side helper of Map::export_entries: appends the occupied slots of one slab.
template <unsigned W>
inline void export_slab(const Slab<W>& s, std::vector<std::uint64_t>* keys, std::vector<std::uint64_t>* values) {
  for (unsigned i = 0; i < Slab<W>::kKeySlots; ++i) {
    const std::uint64_t k = s.keys.elem[i];
    if (k != kReservedKey) {
      keys->push_back(k);
      values->push_back(s.values.elem[i]);
    }
  }
}

/// export_slab for a slab that batches may be writing: reads each key and value atomically.
template <unsigned W>
inline void export_slab_live(const Slab<W>& s, std::vector<std::uint64_t>* keys, std::vector<std::uint64_t>* values) {
  for (unsigned i = 0; i < Slab<W>::kKeySlots; ++i) {
    const std::uint64_t k = s.keys.load(i, cods::Order::relaxed);
    if (k != kReservedKey) {
      keys->push_back(k);
      values->push_back(s.values.load(i, cods::Order::relaxed));
    }
  }
}

}  // namespace duet::lslab
