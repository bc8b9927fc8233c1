// C-objects and fragments: the coalescable part of a node and its near-memory copy.
//
// A c-object (CObject<N>) is an array of N 8-byte elements in far memory (host DRAM or GPU
// global memory), aligned so a group reads it in as few memory transactions as possible. A
// Fragment<N, Group> is its copy in near memory: on the CPU the whole array (plain loops the
// compiler vectorises), on a GPU tile of G lanes N/G elements per lane, element i held by lane
// i % G as that lane's (i / G)-th element (the non-vectorised placement of dissertation 5.2).
//
// Two atomicity regimes (dissertation 5.3):
//  * elementwise atomic (CObject): get/set move every element with a single-element atomic,
//    so a reader never sees a torn element but may see a multi-element set half done;
//  * fully atomic (AtomicCObject): a version word guards the elements like a sequence lock, so
//    get returns a copy that equals some set in its entirety, and set is exclusive. This is a
//    portable replacement for the seed's "one cache line is read atomically" assumption, which
//    the PTX memory model does not guarantee. Its readers take no lock but retry while a
//    set is in progress.
#pragma once

#include <cstdint>
#include <type_traits>

#include "cods/atomic.hpp"
#include "cods/group.hpp"
#include "cods/hd.hpp"

namespace duet::cods {

/// Bit mask with one bit per c-object element (N <= 64).
using ElementMask = std::uint64_t;

DUET_HD DUET_INLINE int lowest_bit(ElementMask m) {
#if DUET_DEVICE_PASS
  return m ? __ffsll(static_cast<long long>(m)) - 1 : -1;
#else
  return m ? __builtin_ctzll(m) : -1;
#endif
}

DUET_HD DUET_INLINE int popcount(ElementMask m) {
#if DUET_DEVICE_PASS
  return __popcll(m);
#else
  return __builtin_popcountll(m);
#endif
}

/// N 8-byte elements in far memory, aligned to min(N * 8, 128) bytes.
template <unsigned N>
struct alignas(N * 8 < 128 ? N * 8 : 128) CObject {
  static_assert(N >= 1 && N <= 64, "a c-object holds 1 to 64 elements");
  static constexpr unsigned kElements = N;
  std::uint64_t elem[N];

  /// Single-element atomics (always atomic, in every regime).
  DUET_HD DUET_INLINE std::uint64_t load(unsigned i, Order o = Order::acquire) const {
    return atomic_load(&elem[i], o);
  }
  DUET_HD DUET_INLINE void store(unsigned i, std::uint64_t v, Order o = Order::release) {
    atomic_store(&elem[i], v, o);
  }
  DUET_HD DUET_INLINE std::uint64_t exchange(unsigned i, std::uint64_t v, Order o = Order::relaxed) {
    return atomic_exchange(&elem[i], v, o);
  }
  /// Replaces element i and returns its previous value, for a caller that already excludes
  /// other writers (readers may run). On the GPU this is one atomic exchange: a load then a
  /// store of the same line makes the store wait behind the load, measured 4x slower for
  /// L-Slab's PUT. On the CPU a plain load and store is cheaper than a locked exchange.
  DUET_HD DUET_INLINE std::uint64_t exchange_exclusive(unsigned i, std::uint64_t v) {
#if DUET_DEVICE_PASS
    return exchange(i, v);
#else
    const std::uint64_t old = load(i, Order::relaxed);
    store(i, v, Order::relaxed);
    return old;
#endif
  }
  DUET_HD DUET_INLINE bool cas(unsigned i, std::uint64_t& expected, std::uint64_t desired,
                               Order o = Order::acq_rel) {
    return atomic_cas(&elem[i], expected, desired, o);
  }
};

/// The near copy of a CObject<N> held by a group. All member functions are collectives.
template <unsigned N, class Group>
struct Fragment {
  static constexpr unsigned kGroup = Group::kSize;
  static_assert(N % kGroup == 0, "a c-object's elements divide evenly among the group's lanes");
  static constexpr unsigned kPerLane = N / kGroup;
  std::uint64_t e[kPerLane];

  /// Element index of this lane's j-th element.
  DUET_HD static DUET_INLINE unsigned index(const Group& g, unsigned j) { return g.lane() + j * kGroup; }

  /// Elementwise-atomic get: each element read with a relaxed single-element atomic.
  DUET_HD DUET_INLINE void get(const Group& g, const CObject<N>& far) {
DUET_UNROLL
    for (unsigned j = 0; j < kPerLane; ++j) e[j] = atomic_load(&far.elem[index(g, j)], Order::relaxed);
  }
  /// Elementwise-atomic set: each element written with a relaxed single-element atomic.
  DUET_HD DUET_INLINE void set(const Group& g, CObject<N>& far) const {
DUET_UNROLL
    for (unsigned j = 0; j < kPerLane; ++j) atomic_store(&far.elem[index(g, j)], e[j], Order::relaxed);
  }
  /// As set(), calling mid() (tests: a writer stalled mid-set) after the elements below N / 2
  /// are written and before the others.
  template <class Mid>
  DUET_HD DUET_INLINE void set(const Group& g, CObject<N>& far, Mid&& mid) const {
    for (unsigned j = 0; j < kPerLane; ++j)
      if (index(g, j) < N / 2) atomic_store(&far.elem[index(g, j)], e[j], Order::relaxed);
    fence(Order::release);
    g.sync();
    mid();
    g.sync();
    for (unsigned j = 0; j < kPerLane; ++j)
      if (index(g, j) >= N / 2) atomic_store(&far.elem[index(g, j)], e[j], Order::relaxed);
  }
  /// Fills every element with v (near memory only).
  DUET_HD DUET_INLINE void fill(std::uint64_t v) {
DUET_UNROLL
    for (unsigned j = 0; j < kPerLane; ++j) e[j] = v;
  }

  /// Mask of elements (over the whole c-object) for which pred(value, index) holds.
  template <class Pred>
  DUET_HD DUET_INLINE ElementMask ballot(const Group& g, Pred pred) const {
    ElementMask m = 0;
DUET_UNROLL
    for (unsigned j = 0; j < kPerLane; ++j) {
      if constexpr (kGroup == 1) {
        m |= ElementMask(pred(e[j], j) ? 1 : 0) << j;
      } else {
        m |= ElementMask(g.ballot(pred(e[j], index(g, j)))) << (j * kGroup);
      }
    }
    return m;
  }
  /// Mask of elements equal to v, restricted to `within`.
  DUET_HD DUET_INLINE ElementMask match(const Group& g, std::uint64_t v, ElementMask within = ~ElementMask(0)) const {
    return ballot(g, [v](std::uint64_t x, unsigned) { return x == v; }) & within;
  }
  /// Index of the first element equal to v within `within`, or -1.
  DUET_HD DUET_INLINE int find(const Group& g, std::uint64_t v, ElementMask within = ~ElementMask(0)) const {
    return lowest_bit(match(g, v, within));
  }
  /// Number of elements equal to v within `within`.
  DUET_HD DUET_INLINE int count(const Group& g, std::uint64_t v, ElementMask within = ~ElementMask(0)) const {
    return popcount(match(g, v, within));
  }
  /// Element i, returned to every lane (a warp shuffle from its owner on the GPU).
  DUET_HD DUET_INLINE std::uint64_t broadcast(const Group& g, unsigned i) const {
    if constexpr (kGroup == 1) {
      return e[i];
    } else {
      const unsigned slot = i / kGroup;
      std::uint64_t mine = e[0];
DUET_UNROLL
      for (unsigned j = 1; j < kPerLane; ++j)
        if (j == slot) mine = e[j];
      return g.shfl(mine, i % kGroup);
    }
  }
  /// Smallest element within `within` (UINT64_MAX when none), returned to every lane.
  DUET_HD DUET_INLINE std::uint64_t min(const Group& g, ElementMask within = ~ElementMask(0)) const {
    std::uint64_t best = ~std::uint64_t(0);
DUET_UNROLL
    for (unsigned j = 0; j < kPerLane; ++j)
      if ((within >> index(g, j)) & 1) best = e[j] < best ? e[j] : best;
    for (unsigned off = 1; off < kGroup; off <<= 1) {
      const std::uint64_t other = g.shfl(best, (g.lane() + off) % kGroup);
      best = other < best ? other : best;
    }
    return best;
  }
  /// Largest element within `within` (0 when none), returned to every lane.
  DUET_HD DUET_INLINE std::uint64_t max(const Group& g, ElementMask within = ~ElementMask(0)) const {
    std::uint64_t best = 0;
DUET_UNROLL
    for (unsigned j = 0; j < kPerLane; ++j)
      if ((within >> index(g, j)) & 1) best = e[j] > best ? e[j] : best;
    for (unsigned off = 1; off < kGroup; off <<= 1) {
      const std::uint64_t other = g.shfl(best, (g.lane() + off) % kGroup);
      best = other > best ? other : best;
    }
    return best;
  }
};

/// A c-object in the fully atomic regime: a version word (even: stable, odd: being written)
/// in front of N elements. Readers take no lock but retry while a set is in progress, so a
/// stalled writer delays them; a writer excludes other writers.
template <unsigned N>
struct AtomicCObject {
  std::uint64_t version;
  CObject<N> data;
};

/// Fully atomic get: copies `far` into `frag` so that the copy equals the state after some
/// complete set. Retries while a set is in progress (it can wait on a stalled writer).
template <unsigned N, class Group>
DUET_HD DUET_INLINE void atomic_get(const Group& g, const AtomicCObject<N>& far, Fragment<N, Group>& frag) {
  for (;;) {
    std::uint64_t v1 = 0;
    if (g.is_leader()) v1 = atomic_load(&far.version, Order::acquire);
    v1 = g.shfl(v1, 0);
    if (v1 & 1) {
      spin_pause();
      continue;
    }
    fence(Order::acquire);  // every lane: its element loads come after the leader's v1
    frag.get(g, far.data);
    fence(Order::acquire);
    g.sync();  // every lane's loads are done before the leader re-reads the version
    std::uint64_t v2 = 0;
    if (g.is_leader()) v2 = atomic_load(&far.version, Order::relaxed);
    if (g.shfl(v2, 0) == v1) return;
  }
}

/// No hook: atomic_set's default.
struct NoStall {
  DUET_HD DUET_INLINE void operator()() const {}
};

/// Fully atomic set: writes `frag` into `far` as one step that readers see whole or not at all.
/// mid (tests only) is called halfway through the element stores, with the version odd.
template <unsigned N, class Group, class Mid = NoStall>
DUET_HD DUET_INLINE void atomic_set(const Group& g, AtomicCObject<N>& far, const Fragment<N, Group>& frag,
                                    Mid&& mid = Mid{}) {
  std::uint64_t v = 0;
  if (g.is_leader()) {
    for (;;) {
      v = atomic_load(&far.version, Order::relaxed);
      if (!(v & 1) && atomic_cas(&far.version, v, v + 1, Order::acquire)) break;
      spin_pause();
    }
  }
  g.sync();
  fence(Order::seq_cst);  // every lane: the odd version is ordered before its element stores
  if constexpr (std::is_same_v<std::decay_t<Mid>, NoStall>) frag.set(g, far.data);
  else frag.set(g, far.data, mid);
  fence(Order::release);
  g.sync();
  if (g.is_leader()) atomic_store(&far.version, v + 2, Order::release);
}

}  // namespace duet::cods
