// CPU front end of the CODS versioned B-link tree (versioned_blink_tree.hpp): heap nodes,
// mem::EpochManager reclamation of cut versions, a snapshot registry, and the CPU twin of a GPU
// versioned batch. docs/cods.md, "Versioned tree".
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "duet/status.hpp"
#include "index/cods/cpu_env.hpp"
#include "index/cods/versioned_blink_tree.hpp"

namespace duet::cods::ds {

/// An ordered map of 8-byte keys and values with snapshots. GET, INSERT (if absent) and REMOVE
/// act on the latest state (GET lock-free); RANGE reads one snapshot. Thread-safe: each thread
/// uses its own session; snapshots may be taken and released from any thread. Sessions and
/// snapshots must be gone before the tree.
template <unsigned K, Regime R>
class CpuVersionedBLinkTree {
 public:
  using Algo = VersionedBLinkTree<K, CpuThread, R>;
  using Leaf = typename Algo::Leaf;
  using IndexNode = typename Algo::Node;

  /// A registered snapshot: RANGE at it sees the tree as it was when it was taken. Versions it
  /// may read are kept until it is released (destroyed). Move-only.
  class Snapshot {
   public:
    Snapshot() = default;
    Snapshot(Snapshot&& o) noexcept : tree_(o.tree_), ts_(o.ts_) { o.tree_ = nullptr; }
    Snapshot& operator=(Snapshot&& o) noexcept {
      if (this != &o) {
        release();
        tree_ = o.tree_;
        ts_ = o.ts_;
        o.tree_ = nullptr;
      }
      return *this;
    }
    ~Snapshot() { release(); }
    /// The timestamp: updates stamped <= ts are visible at it.
    std::uint64_t ts() const { return ts_; }
    bool valid() const { return tree_ != nullptr; }
    void release() {
      if (tree_) tree_->release(ts_);
      tree_ = nullptr;
    }

   private:
    friend class CpuVersionedBLinkTree;
    Snapshot(CpuVersionedBLinkTree* t, std::uint64_t ts) : tree_(t), ts_(ts) {}
    CpuVersionedBLinkTree* tree_ = nullptr;
    std::uint64_t ts_ = 0;
  };

  CpuVersionedBLinkTree() {
    auto* idx = new IndexNode();
    auto* first = new Leaf();
    Algo::init(&root_, idx, first);
  }
  ~CpuVersionedBLinkTree() {
    std::vector<IndexNode*> index;
    Algo::Index::for_each_node(&root_.index, [&](IndexNode* n) { index.push_back(n); });
    for (IndexNode* n : index) delete n;
    std::vector<Leaf*> leaves;
    Algo::for_each_leaf(&root_, [&](Leaf* n) { leaves.push_back(n); }, [&](Leaf* n) { leaves.push_back(n); });
    for (Leaf* n : leaves) delete n;
  }
  CpuVersionedBLinkTree(const CpuVersionedBLinkTree&) = delete;
  CpuVersionedBLinkTree& operator=(const CpuVersionedBLinkTree&) = delete;

  /// A session for the calling thread (hooks: tests only; kBugRangeAtLatest plants the bug).
  std::unique_ptr<CpuEnv> session(const Hooks* hooks = nullptr) { return std::make_unique<CpuEnv>(epoch_, hooks); }

  /// Takes and registers a snapshot of the current state.
  Snapshot snapshot() {
    std::lock_guard<std::mutex> lk(mutex_);
    const std::uint64_t s = atomic_load(&root_.clock, Order::acquire);
    live_.insert(s);
    return Snapshot(this, s);
  }

  TreeResult get(CpuEnv& s, std::uint64_t k) {
    auto pin = s.pin();
    return Algo::get(CpuThread{}, s, &root_, k);
  }
  /// Insert if absent: kNotFound inserted; kFound present (value: the present one).
  TreeResult insert(CpuEnv& s, std::uint64_t k, std::uint64_t v) {
    auto pin = s.pin();
    Clock c{this};
    return Algo::insert(CpuThread{}, s, c, &root_, k, v);
  }
  /// kFound with the removed value, or kNotFound.
  TreeResult remove(CpuEnv& s, std::uint64_t k) {
    auto pin = s.pin();
    Clock c{this};
    return Algo::remove(CpuThread{}, s, c, &root_, k);
  }

  /// The pairs of [a, b] at `snap`, in key order, at most `limit` (*more says whether [a, b]
  /// held more). InvalidArgument when a > b (naming both), out is null or snap is released.
  Status range(CpuEnv& s, const Snapshot& snap, std::uint64_t a, std::uint64_t b,
               std::vector<std::pair<std::uint64_t, std::uint64_t>>* out,
               std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() - 1, bool* more = nullptr) {
    if (!out) return Status::InvalidArgument("range output is null");
    if (!snap.valid() || snap.tree_ != this) return Status::InvalidArgument("snapshot is released or of another tree");
    if (a > b)
      return Status::InvalidArgument("range start " + std::to_string(a) + " is above its end " + std::to_string(b));
    out->clear();
    auto pin = s.pin();
    const std::uint64_t n = Algo::range(CpuThread{}, s, &root_, snap.ts(), a, b, limit,
                                        [out](std::uint64_t r, std::uint64_t k, std::uint64_t v) {
                                          if (r >= out->size()) out->resize(r + 1);
                                          (*out)[r] = {k, v};
                                        });
    if (more) *more = n > limit;
    return Status::Ok();
  }
  /// RANGE at a snapshot taken (and released) inside the call.
  Status range_now(CpuEnv& s, std::uint64_t a, std::uint64_t b,
                   std::vector<std::pair<std::uint64_t, std::uint64_t>>* out) {
    const Snapshot snap = snapshot();
    return range(s, snap, a, b, out);
  }

  /// The CPU twin of a GPU versioned batch: requests in index order, every RANGE at a snapshot
  /// taken before the batch's first request (the state the GPU's ranges read), or at `at` when
  /// given (the GPU's execute_at). values[i] is a RANGE's last key. InvalidArgument (nothing
  /// runs) for a null array the batch needs, a RANGE whose first key is above its last, or an
  /// `at` released or of another tree; unknown ops are kInvalid.
  Status execute(CpuEnv& s, const Batch& b, VersionedBatchResult& r, const Snapshot* at = nullptr) {
    Status st = check_versioned_batch(b, r);
    if (!st.ok()) return st;
    if (at && (!at->valid() || at->tree_ != this))
      return Status::InvalidArgument("snapshot is released or of another tree");
    const Snapshot own = at ? Snapshot() : snapshot();
    const Snapshot& snap = at ? *at : own;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> page;
    for (std::uint64_t i = 0; i < b.n; ++i) {
      TreeResult t{OpStatus::kInvalid, 0};
      switch (b.ops[i]) {
        case Op::kGet: t = get(s, b.keys[i]); break;
        case Op::kInsert: t = insert(s, b.keys[i], b.values[i]); break;
        case Op::kRemove: t = remove(s, b.keys[i]); break;
        default:
          if (b.ops[i] == kOpRange) {
            auto pin = s.pin();
            const std::uint64_t base = i * r.range_limit;
            const std::uint64_t n = Algo::range(CpuThread{}, s, &root_, snap.ts(), b.keys[i], b.values[i], r.range_limit,
                                                [&](std::uint64_t at, std::uint64_t k, std::uint64_t v) {
                                                  r.range_keys[base + at] = k;
                                                  r.range_values[base + at] = v;
                                                });
            t = {OpStatus::kFound, n};
          }
      }
      r.status[i] = t.status;
      r.values[i] = t.status == OpStatus::kFound ? t.value : 0;
    }
    return Status::Ok();
  }

  /// (key, value) of the latest state in key order; false if a leaf invariant is broken.
  /// Quiescent tree only.
  bool entries(std::vector<std::pair<std::uint64_t, std::uint64_t>>* out) { return Algo::entries(&root_, *out); }
  /// Saved versions (history records) held now. Quiescent tree only.
  std::uint64_t saved_versions() {
    std::uint64_t n = 0;
    Algo::for_each_leaf(&root_, [](Leaf*) {}, [&](Leaf*) { ++n; });
    return n;
  }
  /// Snapshots registered now.
  std::uint64_t live_snapshots() {
    std::lock_guard<std::mutex> lk(mutex_);
    return live_.size();
  }
  VersionedRoot* root() { return &root_; }

 private:
  /// Per-update clock: a fetch-add on the tree's clock; the oldest registered snapshot, or the
  /// clock when none is registered (every later snapshot is at least that).
  struct Clock {
    CpuVersionedBLinkTree* t;
    std::uint64_t stamp(const CpuThread&) { return atomic_add(&t->root_.clock, 1, Order::acq_rel) + 1; }
    std::uint64_t oldest(const CpuThread&) { return t->oldest_live(); }
    bool needed(const CpuThread&, std::uint64_t c, std::uint64_t stamp) {
      std::lock_guard<std::mutex> lk(t->mutex_);
      auto it = t->live_.lower_bound(c);
      return it != t->live_.end() && *it < stamp;
    }
  };

  std::uint64_t oldest_live() {
    std::lock_guard<std::mutex> lk(mutex_);
    if (live_.empty()) return atomic_load(&root_.clock, Order::acquire);
    return *live_.begin();
  }
  void release(std::uint64_t s) {
    std::lock_guard<std::mutex> lk(mutex_);
    auto it = live_.find(s);
    if (it != live_.end()) live_.erase(it);
  }

  mem::EpochManager epoch_;  // destroyed last: frees what sessions retired
  VersionedRoot root_{};
  std::mutex mutex_;
  std::multiset<std::uint64_t> live_;  ///< registered snapshots
};

}  // namespace duet::cods::ds
