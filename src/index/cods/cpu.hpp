// CPU front ends of the CODS structures: each owns its nodes and an EpochManager, and runs the
// DUET_HD algorithm on cods::CpuThread. A thread opens a session (its epoch participant, and in
// tests its hooks and counters) and passes it to every call; each call pins the epoch for its
// duration. Sessions must be destroyed before their structure.
//
// execute() is the CPU twin of a GPU batch: it runs a batch's requests in index order on the
// calling thread (the GPU runs them concurrently; each request is linearizable and two requests
// on one key in one batch take effect in some serial order). Bad input: a null array that the
// batch needs gives InvalidArgument and nothing runs; an unknown op is kInvalid for that request.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "duet/status.hpp"
#include "index/cods/blink_tree.hpp"
#include "index/cods/cpu_env.hpp"
#include "index/cods/hash_set.hpp"
#include "index/cods/lazy_list.hpp"
#include "mem/host_memory.hpp"

namespace duet::cods::ds {

namespace detail {
/// The argument check every execute() makes: InvalidArgument names the missing array.
inline Status check_batch(const Batch& b, const BatchResult& r, bool needs_values) {
  if (b.n == 0) return Status::Ok();
  if (!b.ops || !b.keys) return Status::InvalidArgument("batch ops or keys array is null");
  if (!r.status || !r.values) return Status::InvalidArgument("batch result array is null");
  if (needs_values && !b.values)
    for (std::uint64_t i = 0; i < b.n; ++i)
      if (b.ops[i] == Op::kInsert) return Status::InvalidArgument("batch values array is null but it holds inserts");
  return Status::Ok();
}

/// After a batch ran: ResourceExhausted naming how many requests stayed kRetry (each changed
/// nothing: it found no free node), else Ok. The GPU driver's status for the same batch.
inline Status retries_exhausted(const Batch& b, const BatchResult& r) {
  std::uint64_t left = 0;
  for (std::uint64_t i = 0; i < b.n; ++i) left += r.status[i] == OpStatus::kRetry;
  if (left == 0) return Status::Ok();
  return Status::ResourceExhausted(std::to_string(left) + " of " + std::to_string(b.n) +
                                   " requests stayed kRetry and changed nothing (no free node); the others applied");
}

/// The calls every set front end makes the same way, over any environment (CpuEnv here,
/// RemoteEnv in remote_front.hpp): contains, insert, remove and the batch execute. Derived
/// gives root() (the structure argument of Algo's calls), the one-request execute(s, op, k)
/// and a static enter(s) whose result a call holds for its duration (an epoch pin, or a
/// remote session's start).
template <class Derived, class Algo, class Env>
class SetCalls {
 public:
  bool contains(Env& s, std::uint64_t k) {
    [[maybe_unused]] auto held = Derived::enter(s);
    return Algo::contains(CpuThread{}, s, self().root(), k);
  }
  /// kNotFound: inserted; kFound: present already (kRetry: remote regions full).
  OpStatus insert(Env& s, std::uint64_t k) {
    [[maybe_unused]] auto held = Derived::enter(s);
    return Algo::insert(CpuThread{}, s, self().root(), k);
  }
  /// kFound: removed; kNotFound: absent.
  OpStatus remove(Env& s, std::uint64_t k) {
    [[maybe_unused]] auto held = Derived::enter(s);
    return Algo::remove(CpuThread{}, s, self().root(), k);
  }
  /// The batch in index order (the CPU twin's semantics, above). As the GPU driver does,
  /// ResourceExhausted when some request found no free node (it stays kRetry, having changed
  /// nothing; the others applied).
  Status execute(Env& s, const Batch& b, BatchResult& r) {
    Status st = check_batch(b, r, false);
    if (!st.ok()) return st;
    for (std::uint64_t i = 0; i < b.n; ++i) {
      r.status[i] = self().execute(s, b.ops[i], b.keys[i]);
      r.values[i] = 0;
    }
    return retries_exhausted(b, r);
  }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
};

/// A tree's batch in index order over any environment: Tree gives execute(s, op, k, v).
/// ResourceExhausted when some request found no free node (kRetry, nothing changed by it).
template <class Tree, class Env>
Status execute_tree_batch(Tree& t, Env& s, const Batch& b, BatchResult& r) {
  Status st = check_batch(b, r, true);
  if (!st.ok()) return st;
  for (std::uint64_t i = 0; i < b.n; ++i) {
    const TreeResult x = t.execute(s, b.ops[i], b.keys[i], b.ops[i] == Op::kInsert ? b.values[i] : 0);
    r.status[i] = x.status;
    r.values[i] = x.status == OpStatus::kFound ? x.value : 0;
  }
  return retries_exhausted(b, r);
}

/// What the CPU set front ends share beyond SetCalls: sessions on their EpochManager (with the
/// arena a planted bug needs), and each call pinned.
template <class Derived, class Algo>
class CpuSet : public SetCalls<Derived, Algo, CpuEnv> {
 public:
  /// A session for the calling thread (hooks: tests only; a session with a planted bug must be
  /// the first one opened, so every node goes to the arena).
  std::unique_ptr<CpuEnv> session(const Hooks* hooks = nullptr) {
    return std::make_unique<CpuEnv>(epoch_, hooks, arena_for(hooks));
  }
  /// What each call holds: an epoch pin.
  static mem::EpochManager::Guard enter(CpuEnv& s) { return s.pin(); }

 protected:
  /// Nodes went to the arena (a planted bug): the arena frees them, not the structure.
  bool has_arena() const { return arena_ != nullptr; }

 private:
  Arena* arena_for(const Hooks* hooks) {
    std::lock_guard<std::mutex> lk(arena_mutex_);
    if (hooks && hooks->bug != Bug::kNone && !arena_) arena_ = std::make_unique<Arena>();
    return arena_.get();
  }

  mem::EpochManager epoch_;  // destroyed last: frees what sessions retired
  std::mutex arena_mutex_;
  std::unique_ptr<Arena> arena_;  // only under a planted bug
};
}  // namespace detail

/// A sorted set of 8-byte keys (any value, 0 and 2^64-1 included) in a coalesced lazy list of
/// K-key nodes. contains is lock-free; a search costs ceil(n/K) node reads, plus the keyless
/// head in the elementwise regime.
template <unsigned K, Regime R>
class CpuLazyList : public detail::CpuSet<CpuLazyList<K, R>, LazyList<K, CpuThread, R>> {
  using Base = detail::CpuSet<CpuLazyList<K, R>, LazyList<K, CpuThread, R>>;
  friend detail::SetCalls<CpuLazyList, LazyList<K, CpuThread, R>, CpuEnv>;

 public:
  using Algo = LazyList<K, CpuThread, R>;
  using Node = typename Algo::Node;

  CpuLazyList() : head_(new Node()) { Algo::init_head(head_); }
  ~CpuLazyList() {
    if (!this->has_arena()) Algo::destroy_chain(head_, [](Node* n) { delete n; });
    delete head_;
  }
  CpuLazyList(const CpuLazyList&) = delete;
  CpuLazyList& operator=(const CpuLazyList&) = delete;

  using Base::execute;
  OpStatus execute(CpuEnv& s, Op op, std::uint64_t k) {
    switch (op) {
      case Op::kGet: {
        auto pin = s.pin();
        return Algo::lookup(CpuThread{}, s, head_, k);
      }
      case Op::kInsert: return this->insert(s, k);
      case Op::kRemove: return this->remove(s, k);
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
  Node* root() const { return head_; }

  Node* head_;
};

/// A set of 8-byte keys in `buckets` coalesced lazy lists. Create with make().
template <unsigned K, Regime R>
class CpuHashSet : public detail::CpuSet<CpuHashSet<K, R>, HashSet<K, CpuThread, R>> {
  using Base = detail::CpuSet<CpuHashSet<K, R>, HashSet<K, CpuThread, R>>;
  friend detail::SetCalls<CpuHashSet, HashSet<K, CpuThread, R>, CpuEnv>;

 public:
  using Algo = HashSet<K, CpuThread, R>;
  using Node = typename Algo::Node;
  /// The most buckets make() accepts (2^32).
  static constexpr std::uint64_t kMaxBuckets = std::uint64_t(1) << 32;

  /// InvalidArgument for a null out, or buckets 0 or above kMaxBuckets; ResourceExhausted when
  /// the heads cannot be mapped. The heads are one mapping on huge pages where the kernel allows
  /// (a GET's first read lands in it: at K = 8, 125,000 heads are 16 MB, past 4 KB pages' TLB).
  static Status make(std::uint64_t buckets, std::unique_ptr<CpuHashSet>* out) {
    if (!out) return Status::InvalidArgument("out is null");
    if (buckets == 0 || buckets > kMaxBuckets)
      return Status::InvalidArgument("bucket count " + std::to_string(buckets) + " is outside [1, 2^32]");
    std::unique_ptr<CpuHashSet> s(new CpuHashSet());
    s->heads_bytes_ = sizeof(Node) * buckets;
    s->heads_ = static_cast<Node*>(mem::map_zeroed(s->heads_bytes_));
    if (!s->heads_) return Status::ResourceExhausted("cannot map " + std::to_string(buckets) + " bucket heads");
    for (std::uint64_t i = 0; i < buckets; ++i) Algo::List::init_head(new (&s->heads_[i]) Node());
    s->view_ = {s->heads_, buckets};
    *out = std::move(s);
    return Status::Ok();
  }
  ~CpuHashSet() {
    if (!heads_) return;
    if (!this->has_arena())
      for (std::uint64_t i = 0; i < view_.buckets; ++i) Algo::List::destroy_chain(&heads_[i], [](Node* n) { delete n; });
    mem::unmap(heads_, heads_bytes_);
  }
  CpuHashSet(const CpuHashSet&) = delete;
  CpuHashSet& operator=(const CpuHashSet&) = delete;

  using Base::execute;
  OpStatus execute(CpuEnv& s, Op op, std::uint64_t k) {
    auto pin = s.pin();
    return Algo::execute(CpuThread{}, s, view_, op, k);
  }
  std::uint64_t buckets() const { return view_.buckets; }
  /// Every key, bucket by bucket. Quiescent set only.
  std::vector<std::uint64_t> keys() const {
    std::vector<std::uint64_t> out;
    for (std::uint64_t i = 0; i < view_.buckets; ++i) Algo::List::keys(&heads_[i], out);
    return out;
  }

 private:
  CpuHashSet() = default;
  const typename Algo::View& root() const { return view_; }

  Node* heads_ = nullptr;  // mem::map_zeroed, heads_bytes_ long
  std::size_t heads_bytes_ = 0;
  typename Algo::View view_;
};

/// An ordered map of 8-byte keys and values in a B-link tree of K-key leaves. GET is lock-free.
/// Nodes are never merged or freed before the tree is destroyed, so it needs no reclamation.
template <unsigned K, Regime R>
class CpuBLinkTree {
 public:
  using Algo = BLinkTree<K, CpuThread, R>;
  using Node = typename Algo::Node;

  CpuBLinkTree() {
    Node* leaf = new Node();
    Algo::init_leaf(leaf);
    root_.node = reinterpret_cast<std::uint64_t>(leaf);
  }
  ~CpuBLinkTree() {
    std::vector<Node*> all;
    Algo::for_each_node(&root_, [&](Node* n) { all.push_back(n); });
    for (Node* n : all) delete n;
  }
  CpuBLinkTree(const CpuBLinkTree&) = delete;
  CpuBLinkTree& operator=(const CpuBLinkTree&) = delete;

  std::unique_ptr<CpuEnv> session(const Hooks* hooks = nullptr) { return std::make_unique<CpuEnv>(epoch_, hooks); }

  TreeResult get(CpuEnv& s, std::uint64_t k) { return Algo::get(CpuThread{}, s, &root_, k); }
  /// Insert if absent: kNotFound inserted; kFound present (value: the present one).
  TreeResult insert(CpuEnv& s, std::uint64_t k, std::uint64_t v) { return Algo::insert(CpuThread{}, s, &root_, k, v); }
  /// kFound with the removed value, or kNotFound.
  TreeResult remove(CpuEnv& s, std::uint64_t k) { return Algo::remove(CpuThread{}, s, &root_, k); }
  TreeResult execute(CpuEnv& s, Op op, std::uint64_t k, std::uint64_t v) {
    return Algo::execute(CpuThread{}, s, &root_, op, k, v);
  }
  Status execute(CpuEnv& s, const Batch& b, BatchResult& r) { return detail::execute_tree_batch(*this, s, b, r); }
  /// (key, value) in key order; false if a leaf invariant is broken. Quiescent tree only.
  bool entries(std::vector<std::pair<std::uint64_t, std::uint64_t>>* out) { return Algo::entries(&root_, *out); }
  unsigned height() { return Algo::height(&root_); }
  TreeRoot* root() { return &root_; }

 private:
  mem::EpochManager epoch_;  // sessions join it; the tree retires nothing
  TreeRoot root_{};
};

}  // namespace duet::cods::ds
