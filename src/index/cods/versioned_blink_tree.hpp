// The CODS versioned B-link tree (after Awad et al.'s multi-version GPU B-tree, dissertation
// Fig 5.7), written once for both processors: GET and updates on the latest state, RANGE at a
// snapshot (a timestamp), copy-on-write leaves with timestamped versions, and versions below the
// oldest live snapshot freed.
//
// Built on the plain tree (blink_tree.hpp) without changing it:
//  * the index is a plain BLinkTree<K, Group, R> whose entries are (low key of a data leaf, data
//    leaf address). Its leaves play the part of the plain tree's lowest internal level, so a
//    descent reads as many nodes as in the plain tree. Every index leaf holds its own low key (a
//    split's upper half starts with it, key 0 is entered at creation and the index removes
//    nothing), so the entry of the last low <= k lies in the index leaf covering k;
//  * a data leaf (VLeaf) is a plain tree node (its lock/version word, keys c-object with meta,
//    high key and right link, values c-object) plus two words: `prev`, the newest saved older
//    version, and `origin`, the leaf it was split from. The values c-object's spare slot K holds
//    the leaf content's timestamp.
//
// Timestamps. An update takes its stamp t while holding the leaf's lock (CPU: one fetch-add on
// the tree's clock; GPU: the batch's stamp), so a reader that took snapshot s before the update
// locked sees it only if t <= s. A version with timestamp v is the leaf's content from v until
// the next version's timestamp. A RANGE at s reads, per leaf, the newest version with timestamp
// <= s: the leaf's content, else the first such record down its `prev` chain.
//
// Copy-on-write. An update of a leaf whose content has timestamp c < t saves that content in a
// fresh node (a history record, immutable once linked) in front of `prev` when some live snapshot
// lies in [c, t) (it reads that content), then writes the leaf in place under its lock with
// timestamp t. Otherwise no snapshot can ask for the old content and nothing is saved; when
// c == t (a second update of the leaf in one GPU batch) the version at t - 1 is saved already.
//
// Reclamation. After saving, the chain is cut behind the first record with timestamp <= o (the
// version snapshot o reads; every live snapshot is >= o, so it needs nothing older) and the cut
// records are retired (CPU: mem/epoch; GPU: the pool reuses them once no batch can see them);
// with nothing saved the whole chain is retired. Only the leaf's lock holder cuts its chain.
//
// Splits. A full leaf is split by copy-and-partition, both halves with timestamp t: the upper
// half goes to a new leaf R (prev empty, origin = the split leaf), published by the split leaf's
// new right link; then (separator, R) is entered into the index (a plain-tree insert; when the
// pool is empty it is skipped and right links keep the tree correct). Ranges only shrink (a
// split lowers high, low never changes), so the version at s of the leaf covering a key at s
// covers every key of its range at s: a RANGE takes from that version the keys of
// [cursor, its high), moves the cursor to its high (a leaf boundary at s, hence the low of a
// current leaf that existed at s) and continues with that leaf, reached by right links. A leaf
// born after s has no version <= s; the reader then goes to its origin, which covered it at s.
//
// Test hooks: env.after_search() is called between an update's descent and its lock, and
// between two leaves of a RANGE.
//
// Costs: GET, INSERT, REMOVE as in the plain tree, plus one node written per leaf update while
// a snapshot older than the update is live (and one per batch and leaf on the GPU). A RANGE at
// s reads one node per leaf it spans, plus one per saved version it skips.
#pragma once

#include <cstdint>
#include <string>

#include "duet/status.hpp"
#include "index/cods/blink_tree.hpp"
#include "index/cods/common.hpp"

namespace duet::cods::ds {

/// RANGE: the versioned tree's fourth request. keys[i] is the first key and values[i] the last
/// (inclusive); the result lists the pairs of [first, last] at the request's snapshot. The
/// plain structures report it kInvalid (known_op() is false for it).
inline constexpr Op kOpRange = static_cast<Op>(3);

/// Planted bug (negative control of the versioned tree's tests): RANGE reads every leaf's
/// latest content instead of its version at the snapshot. Set in Hooks::bug.
inline constexpr Bug kBugRangeAtLatest = static_cast<Bug>(16);

/// The versioned tree's shared words: the index root, the leftmost data leaf and the CPU clock.
struct VersionedRoot {
  TreeRoot index;         ///< root of the index (a plain B-link tree of leaf low keys)
  std::uint64_t leftmost;  ///< the data leaf whose low is 0 (never changes)
  std::uint64_t clock;     ///< CPU: the last stamp handed out (GPU batches stamp from the host)
};

/// A data leaf or a saved version of one: a plain tree node plus the version words.
template <unsigned K, unsigned G, Regime R>
struct VLeaf {
  TreeNode<K, G, R> node;
  std::uint64_t prev;    ///< the newest saved older version (a VLeaf), or 0
  std::uint64_t origin;  ///< the data leaf this one was split from (0: the leftmost leaf)
};

/// Where a versioned batch's outcomes go: status[i] and values[i] as for the plain tree; for a
/// RANGE, values[i] is range()'s count (up to limit + 1: above `range_limit` the page is
/// incomplete) and its first min(count, range_limit) pairs are range_keys/range_values[i *
/// range_limit + r]. RANGE status: kFound.
struct VersionedBatchResult {
  OpStatus* status = nullptr;
  std::uint64_t* values = nullptr;
  std::uint64_t* range_keys = nullptr;
  std::uint64_t* range_values = nullptr;
  std::uint64_t range_limit = 0;
};

/// The argument check of a versioned batch in host memory (the CPU twin's execute and the GPU
/// driver's execute): InvalidArgument for a null array the batch needs or a RANGE whose first
/// key is above its last (naming the request and both keys). Reads every op once.
inline Status check_versioned_batch(const Batch& b, const VersionedBatchResult& r) {
  if (b.n == 0) return Status::Ok();
  if (!b.ops || !b.keys) return Status::InvalidArgument("batch ops or keys array is null");
  if (!r.status || !r.values) return Status::InvalidArgument("batch result array is null");
  for (std::uint64_t i = 0; i < b.n; ++i) {
    if (b.ops[i] == Op::kInsert && !b.values)
      return Status::InvalidArgument("batch values array is null but it holds inserts");
    if (b.ops[i] != kOpRange) continue;
    if (!b.values) return Status::InvalidArgument("batch values array (range ends) is null but it holds ranges");
    if (r.range_limit > 0 && (!r.range_keys || !r.range_values))
      return Status::InvalidArgument("range output arrays are null but the batch holds ranges");
    if (b.keys[i] > b.values[i])
      return Status::InvalidArgument("range " + std::to_string(i) + ": start " + std::to_string(b.keys[i]) +
                                     " is above its end " + std::to_string(b.values[i]));
  }
  return Status::Ok();
}

/// The algorithm. Clock (per call): stamp(g), the update's timestamp, taken under the leaf's
/// lock; oldest(g), a lower bound of every snapshot that can be read while the update runs,
/// read after stamp(); needed(g, c, t), whether a live snapshot lies in [c, t) (it may say yes
/// when unsure). RANGE's out(r, key, value) is called for the r-th pair (r < limit), from
/// any lane of the group, each r once.
template <unsigned K, class Group, Regime R>
struct VersionedBLinkTree {
  using Index = BLinkTree<K, Group, R>;
  using Shape = TreeShape<K, Group::kSize>;
  using Node = typename Index::Node;
  using Leaf = VLeaf<K, Group::kSize, R>;
  using KFrag = typename Index::KFrag;
  using VFrag = typename Index::VFrag;
  using Meta = typename Index::Meta;
  /// Slot of the values c-object that holds a leaf content's timestamp.
  static constexpr unsigned kStamp = Shape::kLeafCap;
  static_assert(kStamp < Shape::kValueWords, "a leaf's values c-object has a spare slot");
  /// Meta bit of a data leaf: `prev` is not empty (an update or a reader whose leaf has no saved
  /// version skips the load of `prev`, a line of its own). The plain tree's meta uses bits
  /// 0..C-1, 48..55 and 63.
  static constexpr std::uint64_t kHasHistory = std::uint64_t(1) << 62;
  static_assert(Shape::kInnerCap < Shape::kLevelShift && Shape::kLevelShift + 8 <= 62, "bit 62 is free");

  DUET_HD static DUET_INLINE Leaf* leaf(std::uint64_t w) { return reinterpret_cast<Leaf*>(w); }
  DUET_HD static DUET_INLINE std::uint64_t word(const Leaf* n) { return reinterpret_cast<std::uint64_t>(n); }
  DUET_HD static DUET_INLINE std::uint64_t leaf_meta(unsigned count, bool infinite) {
    return prefix_mask(count) | (infinite ? Shape::kInfinite : 0);
  }

  /// Makes `first` an empty leaf covering every key with timestamp 0, `index_node` an index
  /// leaf holding (0, first), and points `root` at them (host or device, before sharing).
  DUET_HD static void init(VersionedRoot* root, Node* index_node, Leaf* first) {
    Index::init_leaf(index_node);
    index_node->key_data().elem[0] = 0;
    index_node->values.elem[0] = word(first);
    index_node->key_data().elem[Shape::kMeta] = leaf_meta(1, true);
    Index::init_leaf(&first->node);
    first->prev = 0;
    first->origin = 0;
    root->index.node = reinterpret_cast<std::uint64_t>(index_node);
    root->leftmost = word(first);
    root->clock = 0;
  }

  /// Lock-free: the current data leaf covering k, its validated content in fk/fv and meta m.
  template <class Env>
  DUET_HD static Leaf* find_leaf(const Group& g, Env& env, VersionedRoot* root, std::uint64_t k, KFrag& fk,
                                 VFrag& fv, Meta& m) {
    Index::descend(g, env, &root->index, k, 0, fk, fv, m);
    const int idx = popcount(fk.ballot(g, [k](std::uint64_t x, unsigned) { return x <= k; }) & m.keys) - 1;
    Leaf* n = idx < 0 ? leaf(leader_load(g, &root->leftmost, Order::relaxed))
                      : leaf(fv.broadcast(g, static_cast<unsigned>(idx)));
    for (;;) {
      Index::read(g, env, &n->node, fk, fv);
      m = Index::meta_of(g, fk);
      if (!Index::beyond(m, k)) return n;
      n = leaf(m.right);
    }
  }

  /// GET on the latest state: kFound with k's value, or kNotFound. Lock-free.
  template <class Env>
  DUET_HD static TreeResult get(const Group& g, Env& env, VersionedRoot* root, std::uint64_t k) {
    KFrag fk;
    VFrag fv;
    Meta m;
    find_leaf(g, env, root, k, fk, fv, m);
    const int slot = fk.find(g, k, m.keys);
    if (slot < 0) return {OpStatus::kNotFound, 0};
    return {OpStatus::kFound, fv.broadcast(g, static_cast<unsigned>(slot))};
  }

  /// INSERT if absent: kNotFound inserted; kFound present (value returned, nothing changed);
  /// kRetry a node was needed and none could be had (nothing changed). clock: stamp() and
  /// oldest() (see the top of the file).
  template <class Env, class Clock>
  DUET_HD static TreeResult insert(const Group& g, Env& env, Clock& clock, VersionedRoot* root, std::uint64_t k,
                                   std::uint64_t v) {
    return update(g, env, clock, root, k, v, true);
  }
  /// REMOVE: kFound with the removed value, or kNotFound; kRetry as for insert.
  template <class Env, class Clock>
  DUET_HD static TreeResult remove(const Group& g, Env& env, Clock& clock, VersionedRoot* root, std::uint64_t k) {
    return update(g, env, clock, root, k, 0, false);
  }

  /// RANGE at snapshot s over [a, b] (a <= b): calls out(r, key, value) for the first `limit`
  /// pairs in key order (r = 0, 1, ...) and returns how many pairs [a, b] held at s, counted up
  /// to limit + 1 (so a result above limit says the page is incomplete). Lock-free. The caller
  /// keeps snapshot s live (registered) for the duration of the call.
  template <class Env, class Out>
  DUET_HD static std::uint64_t range(const Group& g, Env& env, VersionedRoot* root, std::uint64_t s, std::uint64_t a,
                                     std::uint64_t b, std::uint64_t limit, Out&& out) {
    const bool latest = env.planted(kBugRangeAtLatest);
    KFrag fk, vk;
    VFrag fv, vv;
    Meta m;
    Leaf* n = find_leaf(g, env, root, a, fk, fv, m);
    std::uint64_t cursor = a, pos = 0;
    for (;;) {
      // The version of n at s: its content, else the newest saved one <= s, else its origin's.
      vk = fk;
      vv = fv;
      if (!latest && vv.broadcast(g, kStamp) > s) {
        bool found = false;
        const bool history = (fk.broadcast(g, Shape::kMeta) & kHasHistory) != 0;
        for (std::uint64_t p = history ? leader_load(g, &n->prev, Order::acquire) : 0; p != 0;) {
          fence(Order::acquire);
          Leaf* rec = leaf(p);
          vk.get(g, rec->node.key_data());
          vv.get(g, rec->node.values);
          env.node_read();
          if (vv.broadcast(g, kStamp) <= s) {
            found = true;
            break;
          }
          p = leader_load(g, &rec->prev, Order::acquire);
        }
        if (!found && leader_load(g, &n->origin, Order::relaxed) == 0) {
          vk = fk;  // the leftmost leaf (timestamp 0 at birth) always keeps a version <= s:
          vv = fv;  // not reached unless a chain was cut too far; read the latest, not loop
          found = true;
        }
        if (!found) {
          const std::uint64_t o = leader_load(g, &n->origin, Order::relaxed);
          n = o ? leaf(o) : leaf(leader_load(g, &root->leftmost, Order::relaxed));
          Index::read(g, env, &n->node, fk, fv);
          m = Index::meta_of(g, fk);
          continue;
        }
      }
      const Meta vm = Index::meta_of(g, vk);
      const ElementMask hit = vk.ballot(g, [cursor, b](std::uint64_t x, unsigned) { return x >= cursor && x <= b; }) & vm.keys;
      DUET_UNROLL
      for (unsigned j = 0; j < KFrag::kPerLane; ++j) {
        const unsigned i = KFrag::index(g, j);
        if ((hit >> i) & 1) {
          const std::uint64_t r = pos + static_cast<std::uint64_t>(popcount(hit & prefix_mask(i)));
          if (r < limit) out(r, vk.e[j], lane_value(vv, j));
        }
      }
      pos += static_cast<std::uint64_t>(popcount(hit));
      if (pos > limit) return limit + 1;  // the page is full and more follow (shape-independent)
      if (vm.infinite || vm.high > b) return pos;
      cursor = vm.high;
      env.after_search();  // between leaves (tests yield here; a no-op elsewhere)
      // The current leaf whose low is the cursor, by right links from n.
      while (Index::beyond(m, cursor)) {
        n = leaf(m.right);
        Index::read(g, env, &n->node, fk, fv);
        m = Index::meta_of(g, fk);
      }
    }
  }

  /// Host only, quiescent tree: calls visit(leaf) for every data leaf (left to right) and
  /// visit_record(record) for every saved version.
  template <class Visit, class VisitRecord>
  static void for_each_leaf(VersionedRoot* root, Visit visit, VisitRecord visit_record) {
    for (Leaf* n = leaf(root->leftmost); n;) {
      Leaf* right = leaf(n->node.key_data().elem[Shape::kRight]);
      for (Leaf* p = leaf(n->prev); p;) {
        Leaf* older = leaf(p->prev);
        visit_record(p);
        p = older;
      }
      visit(n);
      n = right;
    }
  }

  /// Host only, quiescent tree: appends every (key, value) of the latest state in key order;
  /// false if the leaves break an invariant (order, a key outside its leaf's range).
  template <class Outv>
  static bool entries(VersionedRoot* root, Outv& out) {
    bool ok = true, any = false;
    std::uint64_t last = 0;
    for (Leaf* n = leaf(root->leftmost); n; n = leaf(n->node.key_data().elem[Shape::kRight])) {
      const std::uint64_t meta = n->node.key_data().elem[Shape::kMeta];
      const unsigned count = static_cast<unsigned>(popcount(meta & Shape::kKeyMask));
      if ((meta & Shape::kKeyMask) != prefix_mask(count)) ok = false;
      const bool inf = (meta & Shape::kInfinite) != 0;
      for (unsigned i = 0; i < count; ++i) {
        const std::uint64_t k = n->node.key_data().elem[i];
        if ((any && k <= last) || (!inf && k >= n->node.key_data().elem[Shape::kHigh])) ok = false;
        any = true;
        last = k;
        out.push_back({k, n->node.values.elem[i]});
      }
    }
    return ok;
  }

 private:
  DUET_HD static DUET_INLINE std::uint64_t lane_value(const VFrag& vv, unsigned j) {
    // Keys and values c-objects may differ in size; slot j of the keys is element i of both.
    return j < VFrag::kPerLane ? lane_elem(vv, j) : 0;
  }

  /// Locks n and moves right under locks until it covers k; its fresh content in fk/fv.
  template <class Env>
  DUET_HD static Meta lock_covering(const Group& g, Env& env, Leaf*& n, std::uint64_t k, KFrag& fk, VFrag& fv) {
    for (;;) {
      lock(g, n->node.version());
      Index::read_locked(g, env, &n->node, fk, fv);
      const Meta m = Index::meta_of(g, fk);
      if (!Index::beyond(m, k)) return m;
      unlock(g, n->node.version());
      n = leaf(m.right);
    }
  }

  /// Retires the saved versions from p on (the lock holder of their leaf only).
  template <class Env>
  DUET_HD static void retire_chain(const Group& g, Env& env, std::uint64_t p) {
    while (p != 0) {
      Leaf* rec = leaf(p);
      p = leader_load(g, &rec->prev, Order::relaxed);
      env.retire(g, rec);
    }
  }

  /// Under n's lock, before n's content (fk/fv, timestamp c) is replaced by one stamped t:
  /// saves it into `rec` when `save` (a live snapshot lies in [c, t)), and cuts the chain behind
  /// the version the oldest live snapshot o reads (everything when o >= t), retiring the rest.
  /// had: n's meta says `prev` is not empty. Returns whether it is afterwards (kHasHistory).
  template <class Env>
  DUET_HD static bool keep_history(const Group& g, Env& env, Leaf* n, const KFrag& fk, const VFrag& fv,
                                   std::uint64_t c, std::uint64_t t, std::uint64_t o, bool save, Leaf* rec,
                                   bool had) {
    if (c == t) return had;  // the version before t is saved already (or was not needed)
    const std::uint64_t chain = had ? leader_load(g, &n->prev, Order::relaxed) : 0;
    if (o >= t) {  // no live snapshot reads the content being replaced, nor anything older
      if (chain != 0) {
        leader_store(g, &n->prev, 0, Order::relaxed);
        retire_chain(g, env, chain);
      }
      return false;
    }
    std::uint64_t keep = 0, cut = 0;
    if (save && c <= o) {  // the record is what o reads: nothing older is needed
      keep = word(rec);
      cut = chain;
    } else {  // the first saved version <= o (none: all are newer than o and kept)
      keep = chain;
      while (keep != 0 && leader_load(g, &leaf(keep)->node.values.elem[kStamp], Order::relaxed) > o)
        keep = leader_load(g, &leaf(keep)->prev, Order::relaxed);
      cut = keep != 0 ? leader_load(g, &leaf(keep)->prev, Order::relaxed) : 0;
    }
    if (save) {
      Index::write(g, &rec->node, fk, fv);
      leader_store(g, &rec->prev, keep == word(rec) ? 0 : chain, Order::relaxed);
    }
    if (cut != 0 && keep != word(rec)) leader_store(g, &leaf(keep)->prev, 0, Order::relaxed);
    // The record is whole before the link that publishes it (leader_store fences first).
    if (save) leader_store(g, &n->prev, word(rec), Order::release);
    if (cut != 0) retire_chain(g, env, cut);
    return save || chain != 0;
  }

  template <class Env, class Clock>
  DUET_HD static TreeResult update(const Group& g, Env& env, Clock& clock, VersionedRoot* root, std::uint64_t k,
                                   std::uint64_t v, bool is_insert) {
    Leaf* rec = nullptr;    // a node for the saved version, allocated outside the lock
    Leaf* fresh = nullptr;  // a node for a split's upper half
    for (;;) {
      KFrag fk;
      VFrag fv;
      Meta m;
      Leaf* n = find_leaf(g, env, root, k, fk, fv, m);
      env.after_search();
      m = lock_covering(g, env, n, k, fk, fv);
      const int slot = fk.find(g, k, m.keys);
      const unsigned count = static_cast<unsigned>(popcount(m.keys));
      if ((slot >= 0) == is_insert) {  // insert of a present key, or remove of an absent one
        const std::uint64_t old = slot >= 0 ? fv.broadcast(g, static_cast<unsigned>(slot)) : 0;
        unlock(g, n->node.version());
        if (rec) env.discard(g, rec);
        if (fresh) env.discard(g, fresh);
        return {slot >= 0 ? OpStatus::kFound : OpStatus::kNotFound, old};
      }
      const std::uint64_t t = clock.stamp(g);
      const std::uint64_t o = clock.oldest(g);
      const std::uint64_t c = fv.broadcast(g, kStamp);
      const bool save = c != t && o < t && clock.needed(g, c, t);
      const bool split = is_insert && count >= Shape::kLeafCap;
      if ((save && !rec) || (split && !fresh)) {
        unlock(g, n->node.version());
        if (save && !rec) rec = env.template alloc<Leaf>(g);
        if (split && !fresh) fresh = env.template alloc<Leaf>(g);
        if ((save && !rec) || (split && !fresh)) {
          if (rec) env.discard(g, rec);
          if (fresh) env.discard(g, fresh);
          return {OpStatus::kRetry, 0};
        }
        continue;
      }
      const bool had = (fk.broadcast(g, Shape::kMeta) & kHasHistory) != 0;
      const std::uint64_t hist = keep_history(g, env, n, fk, fv, c, t, o, save, rec, had) ? kHasHistory : 0;
      if (save) rec = nullptr;
      if (!is_insert) {
        const std::uint64_t old = fv.broadcast(g, static_cast<unsigned>(slot));
        remove_at(g, fk, count, static_cast<unsigned>(slot));
        remove_at(g, fv, count, static_cast<unsigned>(slot));
        put(g, fk, Shape::kMeta, leaf_meta(count - 1, m.infinite) | hist);
        put(g, fv, kStamp, t);
        Index::write(g, &n->node, fk, fv);
        unlock(g, n->node.version());
        if (fresh) env.discard(g, fresh);
        if (rec) env.discard(g, rec);
        return {OpStatus::kFound, old};
      }
      const unsigned pos = static_cast<unsigned>(
          popcount(fk.ballot(g, [k](std::uint64_t x, unsigned) { return x < k; }) & m.keys));
      if (!split) {
        insert_at(g, fk, count, pos, k);
        insert_at(g, fv, count, pos, v);
        put(g, fk, Shape::kMeta, leaf_meta(count + 1, m.infinite) | hist);
        put(g, fv, kStamp, t);
        Index::write(g, &n->node, fk, fv);
        unlock(g, n->node.version());
        if (fresh) env.discard(g, fresh);
        if (rec) env.discard(g, rec);
        return {OpStatus::kNotFound, 0};
      }
      // Copy-and-partition: both halves stamped t; the new leaf is published by n's right link.
      insert_at(g, fk, count, pos, k);  // may shift a key over the meta slot: rewritten below
      insert_at(g, fv, count, pos, v);
      const unsigned total = count + 1, h = (total + 1) / 2;
      KFrag uk = split_off(g, fk, total, h);
      VFrag uv = split_off(g, fv, total, h);
      const std::uint64_t sep = uk.broadcast(g, 0);
      put(g, uk, Shape::kMeta, leaf_meta(total - h, m.infinite));
      put(g, uk, Shape::kHigh, m.high);
      put(g, uk, Shape::kRight, m.right);
      put(g, uv, kStamp, t);
      Index::write(g, &fresh->node, uk, uv);
      leader_store(g, &fresh->prev, 0, Order::relaxed);
      leader_store(g, &fresh->origin, word(n), Order::relaxed);
      fence(Order::release);  // the new leaf's content before the link that publishes it
      g.sync();
      put(g, fk, Shape::kMeta, leaf_meta(h, false) | hist);
      put(g, fk, Shape::kHigh, sep);
      put(g, fk, Shape::kRight, word(fresh));
      put(g, fv, kStamp, t);
      Index::write(g, &n->node, fk, fv);
      unlock(g, n->node.version());
      if (rec) env.discard(g, rec);
      // Enter (sep, fresh) into the index; kRetry (no node) skips it: right links still work.
      Index::insert(g, env, &root->index, sep, word(fresh));
      return {OpStatus::kNotFound, 0};
    }
  }
};

}  // namespace duet::cods::ds
