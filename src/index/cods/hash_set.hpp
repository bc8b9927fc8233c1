// The CODS chaining hash set (dissertation 5.2.1, 5.5): an array of coalesced lazy lists, one
// head node per bucket. No key is reserved (presence is each node's bitset). Every operation
// is the list's on the key's bucket: a contains reads ceil(b/K) nodes for a bucket of b keys in
// full nodes (fully atomic: the head holds keys, so a bucket of up to K keys is one read), plus
// the keyless head (elementwise); updates lock one or two nodes of that bucket.
#pragma once

#include <cstdint>

#include "index/cods/lazy_list.hpp"

namespace duet::cods::ds {

/// What a group needs to reach a hash set: the bucket heads, copied into kernels by value.
template <unsigned K, unsigned G, Regime R>
struct HashSetView {
  ListNode<K, G, R>* heads = nullptr;
  std::uint64_t buckets = 0;  ///< at least 1
};

template <unsigned K, class Group, Regime R>
struct HashSet {
  using List = LazyList<K, Group, R>;
  using Node = typename List::Node;
  using View = HashSetView<K, Group::kSize, R>;

  DUET_HD static DUET_INLINE Node* head_of(const View& v, std::uint64_t k) { return v.heads + bucket_of(k, v.buckets); }

  /// True when k is in the set at some instant during the call. Lock-free.
  template <class Env>
  DUET_HD static bool contains(const Group& g, Env& env, const View& v, std::uint64_t k) {
    return List::contains(g, env, head_of(v, k), k);
  }
  /// Inserts k if absent: kNotFound inserted, kFound present already, kRetry no node to be had.
  template <class Env>
  DUET_HD static OpStatus insert(const Group& g, Env& env, const View& v, std::uint64_t k) {
    return List::insert(g, env, head_of(v, k), k);
  }
  /// Removes k if present: kFound removed, kNotFound absent (kRetry: elementwise, no node).
  template <class Env>
  DUET_HD static OpStatus remove(const Group& g, Env& env, const View& v, std::uint64_t k) {
    return List::remove(g, env, head_of(v, k), k);
  }
  /// Runs one request (unknown op: kInvalid, nothing changed).
  template <class Env>
  DUET_HD static OpStatus execute(const Group& g, Env& env, const View& v, Op op, std::uint64_t k) {
    switch (op) {
      case Op::kGet: return List::lookup(g, env, head_of(v, k), k);
      case Op::kInsert: return insert(g, env, v, k);
      case Op::kRemove: return remove(g, env, v, k);
    }
    return OpStatus::kInvalid;
  }
};

}  // namespace duet::cods::ds
