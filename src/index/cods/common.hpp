// What the CODS lazy list, hash set and B-link tree share: the regime switch, request and
// outcome codes, node locks and version words, and the fragment operations that keep a node's
// keys sorted (insert in order, remove and close the gap, move an upper part to a new node).
//
// Everything here is DUET_HD code templated on the group (cods::CpuThread, cods::GpuTile<N>),
// so the structures built on it run unchanged on both processors. Every function is a
// collective: all lanes of a group call it together and get the same result.
#pragma once

#include <cstdint>
#include <type_traits>

#include "cods/cods.hpp"

namespace duet::cods::ds {

/// The atomicity regime of a structure's c-objects (dissertation 5.3, docs/cods.md):
///  * kElementwise: each element moves atomically, a multi-element get may see a set half
///    done; the list therefore never rewrites a published node's keys (copy-on-write);
///  * kFullyAtomic: every get of a node returns the state after some whole set, by a sequence
///    lock on a version word: the list keeps its version in the node's own bitset word
///    (FoldedMeta in lazy_list.hpp, no word in front of the elements), the tree its node lock
///    (blink_tree.hpp; in this regime the version field of the keys' cods::AtomicCObject). Nodes
///    are rewritten in place, the list with at most two sets per update.
enum class Regime : std::uint8_t { kElementwise = 0, kFullyAtomic = 1 };

/// Who runs a request of a GPU batch (gpu_batch.hpp, gpu_versioned.hpp).
///  * kGroup: every request on one group of `group` lanes (a tile of 8, 16 or 32, or one lane
///    when group is 1: the one-lane group, cods::CpuThread, runs on a GPU thread unchanged);
///  * kMixed: reads (GET; the versioned tree's RANGE) on tiles of `group` lanes (8, 16 or 32),
///    one coalesced node read each, and every update on one lane of its own (each lane of a tile
///    takes a request; the tile runs its reads one after another, then the lanes run their
///    updates side by side).
enum class GpuMode : std::uint8_t { kGroup = 0, kMixed = 1 };

/// One request of a batch.
enum class Op : std::uint8_t {
  kGet = 0,     ///< contains (sets) or read the value (tree)
  kInsert = 1,  ///< insert if absent; a present key is left as it is
  kRemove = 2,  ///< remove if present
};

/// Outcome of one request.
enum class OpStatus : std::uint8_t {
  kFound = 0,     ///< the key was present (GET hit; INSERT changed nothing; REMOVE removed it);
                  ///< for the tree the result value is its value
  kNotFound = 1,  ///< the key was absent (GET miss; INSERT inserted it; REMOVE changed nothing)
  kRetry = 2,     ///< a node was needed and the pool had none: nothing was changed
  kInvalid = 3,   ///< unknown op code: nothing was changed
};

/// Planted bugs, for negative controls only (an environment's planted() says which is on):
/// each breaks one rule that docs/cods.md names, and a test shows the checkers catch it.
enum class Bug : std::uint8_t {
  kNone = 0,
  kNoRevalidation = 1,        ///< after locking, skip the checks that prev and curr are still linked and live
  kUnmarkedReplacedNode = 2,  ///< elementwise copy-on-write: leave the replaced node unmarked
  kNoMoveRight = 3,           ///< tree: after locking a node, skip the move right a concurrent split requires
};

/// A batch of n requests in structure-of-arrays form. `values` is read by the tree's inserts
/// only and may be null for the sets (and for a tree batch without inserts).
struct Batch {
  const Op* ops = nullptr;
  const std::uint64_t* keys = nullptr;
  const std::uint64_t* values = nullptr;
  std::uint64_t n = 0;
};

/// Where a batch's outcomes go: status[i], and values[i] (the tree's found value, else 0).
/// stamps (tests: the GPU driver's in-kernel history; null to record nothing): 2n words,
/// stamps[2i] and stamps[2i+1] the tickets that request i drew, from one counter of the
/// structure that runs on across batches, just before it started and just after it ended.
/// A request whose invocation ticket is above another's response ticket saw its effects.
struct BatchResult {
  OpStatus* status = nullptr;
  std::uint64_t* values = nullptr;
  std::uint64_t* stamps = nullptr;
};

DUET_HD DUET_INLINE bool known_op(Op op) { return op == Op::kGet || op == Op::kInsert || op == Op::kRemove; }

/// Words of a c-object holding `used` words: the next power of two, and at least G, so a group
/// of G lanes splits it evenly and cods::CObject can align it (its alignment, min(8N, 128)
/// bytes, must be a power of two). K = 2^m - 2 list keys fill a node exactly (6, 14, 30).
DUET_HD constexpr unsigned round_up(unsigned used, unsigned G) {
  unsigned n = 1;
  while (n < used) n *= 2;
  return n < G ? G : n;
}

/// Mask of the first n elements (n <= 63).
DUET_HD DUET_INLINE constexpr ElementMask prefix_mask(unsigned n) { return (ElementMask(1) << n) - 1; }

/// Bucket of a key among n: MurmurHash3's 64-bit finaliser, then a multiply-high onto [0, n)
/// (no division; every bucket count works). Spreads sequential keys.
DUET_HD DUET_INLINE std::uint64_t bucket_of(std::uint64_t k, std::uint64_t n) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  k ^= k >> 33;
#if DUET_DEVICE_PASS
  return __umul64hi(k, n);
#else
  return static_cast<std::uint64_t>((static_cast<unsigned __int128>(k) * n) >> 64);
#endif
}

/// The low bit of a next pointer: the node holding it was removed or replaced (DELETED).
inline constexpr std::uint64_t kMarked = 1;

// ---- Remote memory (docs/cods.md, "Remote memory"). An environment whose type declares
// `static constexpr bool kRemote = true` (remote_env.hpp) keeps its nodes in far memory that is
// reached by one-sided reads, writes and CASes: the structures then translate every node word
// through it (node ids in stolen pointer bits) and tell it of each round trip they make. For
// every other environment (CpuEnv, the GPU batch driver's) these helpers compile to the plain
// pointer casts and to nothing, so local code is unchanged.

template <class Env, class = void>
struct IsRemoteEnv : std::false_type {};
template <class Env>
struct IsRemoteEnv<Env, std::void_t<decltype(Env::kRemote)>> : std::bool_constant<Env::kRemote> {};

/// The node a stored word points at (the DELETED mark, and a remote word's node id, dropped).
template <class Node, class Env>
DUET_HD DUET_INLINE Node* to_node(Env& env, std::uint64_t w) {
  if constexpr (IsRemoteEnv<Env>::value) return env.template to_node<Node>(w);
  else return reinterpret_cast<Node*>(w & ~std::uint64_t(1));
}
/// The word that points at n (0 for null): a remote word carries n's memory node id.
template <class Env, class Node>
DUET_HD DUET_INLINE std::uint64_t to_word(Env& env, const Node* n) {
  if constexpr (IsRemoteEnv<Env>::value) return env.to_word(n);
  else return reinterpret_cast<std::uint64_t>(n);
}
/// One-sided operations, counted (and delayed) by a remote environment: `trips` reads.
template <class Env>
DUET_HD DUET_INLINE void remote_read(Env& env, unsigned trips = 1) {
  if constexpr (IsRemoteEnv<Env>::value) env.remote_read(trips);
}
template <class Env>
DUET_HD DUET_INLINE void remote_write(Env& env, unsigned trips = 1) {
  if constexpr (IsRemoteEnv<Env>::value) env.remote_write(trips);
}
template <class Env>
DUET_HD DUET_INLINE void remote_cas(Env& env) {
  if constexpr (IsRemoteEnv<Env>::value) env.remote_cas();
}
/// Round trips of a get of a c-object of `data_bytes` data words: one read; a fully atomic one
/// above 64 B adds a read that re-checks its version (one-sided reads are atomic only within a
/// 64 B line, so a fully atomic c-object of at most 64 B needs no version over remote memory).
DUET_HD DUET_INLINE constexpr unsigned get_trips(bool fully_atomic, unsigned data_bytes) {
  return fully_atomic && data_bytes > 64 ? 2 : 1;
}
/// Round trips of a set: one write; a fully atomic one above 64 B takes the version (one CAS,
/// counted by the caller) and writes it back after the data (a second write).
DUET_HD DUET_INLINE constexpr unsigned set_trips(bool fully_atomic, unsigned data_bytes) {
  return fully_atomic && data_bytes > 64 ? 2 : 1;
}

/// Leader-read of a word, returned to every lane.
template <class Group>
DUET_HD DUET_INLINE std::uint64_t leader_load(const Group& g, const std::uint64_t* p, Order o) {
  std::uint64_t v = 0;
  if (g.is_leader()) v = atomic_load(p, o);
  return g.shfl(v, 0);
}

/// Leader-store of a word; every lane's earlier stores are ordered before it.
template <class Group>
DUET_HD DUET_INLINE void leader_store(const Group& g, std::uint64_t* p, std::uint64_t v, Order o) {
  fence(Order::release);
  g.sync();
  if (g.is_leader()) atomic_store(p, v, o);
  g.sync();
}

// ---- Locks and version words. A word is even when free and odd while a writer holds it;
// releasing adds one, so the word is also a version that an optimistic reader validates.

/// One attempt to take the lock word (leader CAS); true on every lane when taken. Cost: one CAS.
template <class Group>
DUET_HD DUET_INLINE bool try_lock(const Group& g, std::uint64_t* w) {
  bool got = false;
  if (g.is_leader()) {
    std::uint64_t v = atomic_load(w, Order::relaxed);
    got = !(v & 1) && atomic_cas(w, v, v + 1, Order::acquire);
  }
  got = g.shfl(got, 0);
  // Sequence-lock rule: the odd word is ordered before every access of the critical section
  // on every lane (the barrier carries the leader's CAS to the others).
  g.sync();
  fence(Order::seq_cst);
  return got;
}

/// Takes the lock word, spinning; the caller holds no other lock of the structure.
template <class Group>
DUET_HD DUET_INLINE void lock(const Group& g, std::uint64_t* w) {
  while (!try_lock(g, w)) spin_pause();
}

/// Takes the lock word while holding others: gives up after a bounded spin so two groups
/// that lock in different orders cannot deadlock (the caller releases everything and retries).
template <class Group>
DUET_HD DUET_INLINE bool lock_bounded(const Group& g, std::uint64_t* w) {
  for (int i = 0; i < 256; ++i) {
    if (try_lock(g, w)) return true;
    spin_pause();
  }
  return false;
}

/// Releases the lock word (every store of the critical section is ordered before it).
template <class Group>
DUET_HD DUET_INLINE void unlock(const Group& g, std::uint64_t* w) {
  fence(Order::release);
  g.sync();
  if (g.is_leader()) atomic_add(w, 1, Order::release);
  g.sync();
}

// The same lock calls for code that holds an environment: each CAS attempt and each release is
// one round trip over remote memory (a release is a write: only the holder changes the word).
template <class Group, class Env>
DUET_HD DUET_INLINE bool try_lock(const Group& g, Env& env, std::uint64_t* w) {
  remote_cas(env);
  return try_lock(g, w);
}
template <class Group, class Env>
DUET_HD DUET_INLINE void lock(const Group& g, Env& env, std::uint64_t* w) {
  while (!try_lock(g, env, w)) spin_pause();
}
template <class Group, class Env>
DUET_HD DUET_INLINE bool lock_bounded(const Group& g, Env& env, std::uint64_t* w) {
  for (int i = 0; i < 256; ++i) {
    if (try_lock(g, env, w)) return true;
    spin_pause();
  }
  return false;
}
template <class Group, class Env>
DUET_HD DUET_INLINE void unlock(const Group& g, Env& env, std::uint64_t* w) {
  remote_write(env);
  unlock(g, w);
}

// ---- Fragment operations on the first `used` elements (the keys or values of a node).

/// Element j of this lane's share of `f`, for a j known only at run time (a select, so the
/// fragment stays in registers on the GPU).
template <unsigned N, class Group>
DUET_HD DUET_INLINE std::uint64_t lane_elem(const Fragment<N, Group>& f, unsigned j) {
  std::uint64_t v = 0;
DUET_UNROLL
  for (unsigned s = 0; s < Fragment<N, Group>::kPerLane; ++s)
    if (s == j) v = f.e[s];
  return v;
}

/// out[i] = in[i + d] for every element i (0 where i + d falls outside the c-object); d is the
/// same on every lane. One shuffle per element slot on a GPU tile, copies on the CPU.
template <unsigned N, class Group>
DUET_HD DUET_INLINE Fragment<N, Group> pulled(const Group& g, const Fragment<N, Group>& in, int d) {
  constexpr int G = static_cast<int>(Group::kSize);
  Fragment<N, Group> out;
  const int s = static_cast<int>(g.lane());
  // The lane this one receives from, and the receiver this lane sends to.
  const int src_lane = ((s + d) % G + G) % G;
  const int recv = ((s - d) % G + G) % G;
  // Floor division of (recv + d) by G: slot offset between a receiver's slot and its source's.
  const int num = recv + d;
  const int shift = num >= 0 ? num / G : -((-num + G - 1) / G);
DUET_UNROLL
  for (unsigned j = 0; j < Fragment<N, Group>::kPerLane; ++j) {
    const int src_slot = static_cast<int>(j) + shift;
    const std::uint64_t send =
        src_slot >= 0 && src_slot < static_cast<int>(Fragment<N, Group>::kPerLane) ? lane_elem(in, src_slot) : 0;
    const std::uint64_t got = g.shfl(send, static_cast<unsigned>(src_lane));
    const int i = static_cast<int>(Fragment<N, Group>::index(g, j));
    out.e[j] = (i + d >= 0 && i + d < static_cast<int>(N)) ? got : 0;
  }
  return out;
}

/// Inserts v at position pos among the first `used` elements (which must be fewer than the
/// c-object holds): elements pos..used-1 move up one; elements from `used` + 1 on are kept.
template <unsigned N, class Group>
DUET_HD DUET_INLINE void insert_at(const Group& g, Fragment<N, Group>& f, unsigned used, unsigned pos,
                                   std::uint64_t v) {
  const Fragment<N, Group> up = pulled(g, f, -1);
DUET_UNROLL
  for (unsigned j = 0; j < Fragment<N, Group>::kPerLane; ++j) {
    const unsigned i = Fragment<N, Group>::index(g, j);
    if (i == pos) f.e[j] = v;
    else if (i > pos && i <= used) f.e[j] = up.e[j];
  }
}

/// Removes the element at pos among the first `used`: elements pos+1..used-1 move down one and
/// element used-1 becomes 0; elements from `used` on are kept.
template <unsigned N, class Group>
DUET_HD DUET_INLINE void remove_at(const Group& g, Fragment<N, Group>& f, unsigned used, unsigned pos) {
  const Fragment<N, Group> down = pulled(g, f, 1);
DUET_UNROLL
  for (unsigned j = 0; j < Fragment<N, Group>::kPerLane; ++j) {
    const unsigned i = Fragment<N, Group>::index(g, j);
    if (i >= pos && i + 1 < used) f.e[j] = down.e[j];
    else if (i + 1 == used) f.e[j] = 0;
  }
}

/// Copy-and-partition: returns elements from..used-1 of f moved to positions 0.. (the upper
/// part, for a new node); f keeps elements below `from` and zero from `from` to used-1.
/// Elements from `used` on are left as they are in f and zero in the result.
template <unsigned N, class Group>
DUET_HD DUET_INLINE Fragment<N, Group> split_off(const Group& g, Fragment<N, Group>& f, unsigned used,
                                                 unsigned from) {
  Fragment<N, Group> upper = pulled(g, f, static_cast<int>(from));
DUET_UNROLL
  for (unsigned j = 0; j < Fragment<N, Group>::kPerLane; ++j) {
    const unsigned i = Fragment<N, Group>::index(g, j);
    if (i >= used - from) upper.e[j] = 0;
    if (i >= from && i < used) f.e[j] = 0;
  }
  return upper;
}

/// Sets element i to v (on the lane that holds it).
template <unsigned N, class Group>
DUET_HD DUET_INLINE void put(const Group& g, Fragment<N, Group>& f, unsigned i, std::uint64_t v) {
DUET_UNROLL
  for (unsigned j = 0; j < Fragment<N, Group>::kPerLane; ++j)
    if (Fragment<N, Group>::index(g, j) == i) f.e[j] = v;
}

}  // namespace duet::cods::ds
