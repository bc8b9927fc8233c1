// Front ends of the CODS structures over simulated remote memory (remote_env.hpp): the lazy
// list, hash set and B-link tree of lazy_list.hpp, hash_set.hpp and blink_tree.hpp, run on
// cods::CpuThread with every node (heads, bucket array and tree root word included) in a
// cods::RemoteMemory the structure owns. Each thread opens a session (its memory-key context,
// counters and, in tests, hooks) and passes it to every call; sessions must be destroyed
// before their structure. Create with make(): bad configuration or bucket count gives
// InvalidArgument, a region too small for the heads ResourceExhausted. An update that finds
// every region full returns kRetry having changed nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "duet/status.hpp"
#include "index/cods/blink_tree.hpp"
#include "index/cods/cpu.hpp"
#include "index/cods/hash_set.hpp"
#include "index/cods/lazy_list.hpp"
#include "index/cods/remote_env.hpp"

namespace duet::cods::ds {

namespace detail {
/// What the remote set front ends share beyond SetCalls (cpu.hpp): the memory and sessions;
/// each call starts its session's read count.
template <class Derived, class Algo>
class RemoteSet : public SetCalls<Derived, Algo, RemoteEnv> {
 public:
  std::unique_ptr<RemoteEnv> session(const Hooks* hooks = nullptr) { return std::make_unique<RemoteEnv>(*mem_, hooks); }
  /// What each call does first: starts the session's count of reads.
  static bool enter(RemoteEnv& s) {
    s.begin();
    return true;
  }
  RemoteMemory& memory() { return *mem_; }

 protected:
  std::unique_ptr<RemoteMemory> mem_;
};
}  // namespace detail

/// A sorted set of 8-byte keys in a coalesced lazy list of K-key nodes in remote memory. A
/// search reads the head and ceil(n/K) nodes (full nodes, no removals), one read each (two for
/// a fully atomic node above 64 B).
template <unsigned K, Regime R>
class RemoteLazyList : public detail::RemoteSet<RemoteLazyList<K, R>, LazyList<K, CpuThread, R>> {
  using Base = detail::RemoteSet<RemoteLazyList<K, R>, LazyList<K, CpuThread, R>>;
  friend detail::SetCalls<RemoteLazyList, LazyList<K, CpuThread, R>, RemoteEnv>;

 public:
  using Algo = LazyList<K, CpuThread, R>;
  using Node = typename Algo::Node;

  static Status make(const RemoteConfig& c, std::unique_ptr<RemoteLazyList>* out) {
    if (!out) return Status::InvalidArgument("out is null");
    std::unique_ptr<RemoteLazyList> l(new RemoteLazyList());
    Status st = RemoteMemory::make(c, &l->mem_);
    if (!st.ok()) return st;
    RemoteContext ctx(*l->mem_);
    void* p = ctx.alloc(sizeof(Node), 0);
    if (!p) return Status::ResourceExhausted("the region has no room for the list head");
    l->head_ = new (p) Node();
    Algo::init_head(l->head_);
    *out = std::move(l);
    return Status::Ok();
  }

  using Base::execute;
  OpStatus execute(RemoteEnv& s, Op op, std::uint64_t k) {
    s.begin();
    switch (op) {
      case Op::kGet: return Algo::lookup(CpuThread{}, s, head_, k);
      case Op::kInsert: return Algo::insert(CpuThread{}, s, head_, k);
      case Op::kRemove: return Algo::remove(CpuThread{}, s, head_, k);
    }
    return OpStatus::kInvalid;
  }
  /// The keys in list order. Quiescent list only.
  std::vector<std::uint64_t> keys() const {
    std::vector<std::uint64_t> out;
    Algo::keys(head_, out);
    return out;
  }

 private:
  RemoteLazyList() = default;
  Node* root() const { return head_; }
  Node* head_ = nullptr;
};

/// A set of 8-byte keys in `buckets` coalesced lazy lists; the bucket heads are one array on
/// memory node 0, list nodes are spread over the memory nodes.
template <unsigned K, Regime R>
class RemoteHashSet : public detail::RemoteSet<RemoteHashSet<K, R>, HashSet<K, CpuThread, R>> {
  using Base = detail::RemoteSet<RemoteHashSet<K, R>, HashSet<K, CpuThread, R>>;
  friend detail::SetCalls<RemoteHashSet, HashSet<K, CpuThread, R>, RemoteEnv>;

 public:
  using Algo = HashSet<K, CpuThread, R>;
  using Node = typename Algo::Node;
  static constexpr std::uint64_t kMaxBuckets = std::uint64_t(1) << 32;

  static Status make(const RemoteConfig& c, std::uint64_t buckets, std::unique_ptr<RemoteHashSet>* out) {
    if (!out) return Status::InvalidArgument("out is null");
    if (buckets == 0 || buckets > kMaxBuckets)
      return Status::InvalidArgument("bucket count " + std::to_string(buckets) + " is outside [1, 2^32]");
    std::unique_ptr<RemoteHashSet> s(new RemoteHashSet());
    Status st = RemoteMemory::make(c, &s->mem_);
    if (!st.ok()) return st;
    const std::uint64_t bytes = buckets * sizeof(Node);
    const std::uint64_t a = bytes <= c.region_bytes ? s->mem_->reserve(0, bytes) : 0;
    if (!a)
      return Status::ResourceExhausted("a region of " + std::to_string(c.region_bytes) + " bytes cannot hold " +
                                       std::to_string(buckets) + " bucket heads");
    Node* heads = reinterpret_cast<Node*>(a);
    for (std::uint64_t i = 0; i < buckets; ++i) Algo::List::init_head(new (&heads[i]) Node());
    s->view_ = {heads, buckets};
    *out = std::move(s);
    return Status::Ok();
  }

  using Base::execute;
  OpStatus execute(RemoteEnv& s, Op op, std::uint64_t k) {
    s.begin();
    return Algo::execute(CpuThread{}, s, view_, op, k);
  }
  std::uint64_t buckets() const { return view_.buckets; }
  /// Every key, bucket by bucket. Quiescent set only.
  std::vector<std::uint64_t> keys() const {
    std::vector<std::uint64_t> out;
    for (std::uint64_t i = 0; i < view_.buckets; ++i) Algo::List::keys(&view_.heads[i], out);
    return out;
  }

 private:
  RemoteHashSet() = default;
  const typename Algo::View& root() const { return view_; }
  typename Algo::View view_;
};

/// An ordered map of 8-byte keys and values in a B-link tree of K-key leaves in remote memory;
/// the root word lives on memory node 0. A GET reads the root word and two words per node
/// visited (the node, then its version again).
template <unsigned K, Regime R>
class RemoteBLinkTree {
 public:
  using Algo = BLinkTree<K, CpuThread, R>;
  using Node = typename Algo::Node;

  static Status make(const RemoteConfig& c, std::unique_ptr<RemoteBLinkTree>* out) {
    if (!out) return Status::InvalidArgument("out is null");
    std::unique_ptr<RemoteBLinkTree> t(new RemoteBLinkTree());
    Status st = RemoteMemory::make(c, &t->mem_);
    if (!st.ok()) return st;
    RemoteContext ctx(*t->mem_);
    void* r = ctx.alloc(sizeof(TreeRoot), 0);
    void* p = ctx.alloc(sizeof(Node), 0);
    if (!r || !p) return Status::ResourceExhausted("the region has no room for the tree's root");
    Node* leaf = new (p) Node();
    Algo::init_leaf(leaf);
    t->root_ = new (r) TreeRoot{ctx.to_word(leaf)};
    *out = std::move(t);
    return Status::Ok();
  }

  std::unique_ptr<RemoteEnv> session(const Hooks* hooks = nullptr) { return std::make_unique<RemoteEnv>(*mem_, hooks); }
  TreeResult get(RemoteEnv& s, std::uint64_t k) {
    s.begin();
    return Algo::get(CpuThread{}, s, root_, k);
  }
  /// Insert if absent: kNotFound inserted; kFound present (value: the present one); kRetry the
  /// regions are full.
  TreeResult insert(RemoteEnv& s, std::uint64_t k, std::uint64_t v) {
    s.begin();
    return Algo::insert(CpuThread{}, s, root_, k, v);
  }
  /// kFound with the removed value, or kNotFound.
  TreeResult remove(RemoteEnv& s, std::uint64_t k) {
    s.begin();
    return Algo::remove(CpuThread{}, s, root_, k);
  }
  TreeResult execute(RemoteEnv& s, Op op, std::uint64_t k, std::uint64_t v) {
    s.begin();
    return Algo::execute(CpuThread{}, s, root_, op, k, v);
  }
  Status execute(RemoteEnv& s, const Batch& b, BatchResult& r) { return detail::execute_tree_batch(*this, s, b, r); }
  /// (key, value) in key order; false if a leaf invariant is broken. Quiescent tree only.
  bool entries(std::vector<std::pair<std::uint64_t, std::uint64_t>>* out) { return Algo::entries(root_, *out); }
  unsigned height() { return Algo::height(root_); }
  RemoteMemory& memory() { return *mem_; }

 private:
  RemoteBLinkTree() = default;
  std::unique_ptr<RemoteMemory> mem_;
  TreeRoot* root_ = nullptr;
};

}  // namespace duet::cods::ds
