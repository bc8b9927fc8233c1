// The CODS B-link tree (Lehman-Yao, after Awad et al.'s GPU B-tree), written once for both
// processors. GET, INSERT (if absent) and REMOVE; no merge.
//
// A node is a version word and two c-objects:
//   keys:   [ C keys, sorted, packed | meta | high key | right link ]   (round_up(C + 3, G) words)
//   values: [ C values (leaves) or child addresses (internal nodes) | one spare slot ]
// meta holds the presence bitset (bits 0..C-1), the level (bits 48..55, leaves 0) and bit 63,
// set when the high key is +infinity. A node covers keys in [low, high); low never changes,
// a split only lowers high. Leaves hold up to K keys; internal nodes hold max(K, 4) entries
// (separator_i, child_i), child_i covering [separator_i, separator_i+1), and separator_0 is
// the node's low. At least 4, because a split keeps ceil((C+1)/2) entries below and puts the
// rest in the new node: with C = 2 every split leaves a node of one entry (fanout 1), and a
// tree of 5 x 10^4 keys was measured 58 levels high (K = 1 and 2); with C >= 3 both halves
// hold at least 2, so the height stays logarithmic. No key is reserved.
//
// Versions: the word is even when the node is free and odd while a writer holds it, and each
// release advances it. A reader gets both c-objects between two reads of the word and retries
// when they differ or a writer is inside, so it never acts on a torn node and takes no lock.
// The word is the node's lock: writers take it with common.hpp's lock() (odd) and release it
// with unlock() (a release add, even again), and readers validate against it in read() below;
// the tree never calls cods::atomic_get/atomic_set. The regime picks only where the word lives:
// kFullyAtomic in front of the keys, in the version field of their AtomicCObject (the node's
// first line holds version and keys), kElementwise in a separate word. In both regimes the
// values c-object is covered by the same word: a GET must pair a key with its value, which one
// c-object's atomicity alone does not give.
//
// Descent is lock-free: from the root, move right while k >= high, else take the child of the
// last separator <= k. Updates lock the leaf, move right under locks (unlock, lock the right
// neighbour) until the leaf covers k, and change it in place. A full node is split by copy-
// and-partition: the upper half goes to a new node (written, then a release fence), and the
// node is rewritten with the lower half, high = the upper's first key and right = the new node
// (publishing it). The node is then unlocked and (separator, new node) inserted into the
// parent, found by a fresh descent to the next level. A split of the root installs a new root
// while still holding the old root's lock. If no node can be had for a parent entry or a new
// root, the entry is skipped: the tree stays correct through right links, only longer to walk.
//
// Costs: a GET reads one node per level plus one per right move; an INSERT into a non-full
// leaf reads those, locks the leaf and writes it once.
//
// Remote memory (remote_env.hpp): node and root words go through to_node/to_word and every
// access names the environment, which counts its round trips: a validated read is two reads
// (the node with its version word, then the version again: a node is always above 64 B), a
// read under the lock one, a write of both c-objects one (they are contiguous), a lock attempt
// one CAS and a release one write. Local environments compile these to the plain accesses.
#pragma once

#include <cstdint>
#include <type_traits>

#include "index/cods/common.hpp"

namespace duet::cods::ds {

/// A tree node's shape for K keys and a group of G lanes: the slots of the keys c-object, the
/// meta word's fields, and the c-objects' sizes. K is 1 to 48: the meta word's presence bitset
/// (bits 0..max(K, 4)-1) must stay below the level field (bits 48..55).
template <unsigned K, unsigned G>
struct TreeShape {
  static_assert(K >= 1 && K <= 48,
                "a tree node holds 1 to 48 keys (the meta word's presence bitset, bits 0..K-1, must stay below "
                "the level at bit 48)");
  static constexpr unsigned kLeafCap = K;
  static constexpr unsigned kInnerCap = K < 4 ? 4 : K;
  static constexpr unsigned kMeta = kInnerCap;
  static constexpr unsigned kHigh = kInnerCap + 1;
  static constexpr unsigned kRight = kInnerCap + 2;
  static constexpr unsigned kWords = round_up(kInnerCap + 3, G);
  static constexpr unsigned kValueWords = round_up(kInnerCap + 1, G);
  static constexpr ElementMask kKeyMask = prefix_mask(kInnerCap);
  static constexpr std::uint64_t kInfinite = std::uint64_t(1) << 63;
  static constexpr unsigned kLevelShift = 48;
  static_assert(kInnerCap <= kLevelShift, "the presence bitset and the level field of the meta word overlap");
};

template <unsigned K, unsigned G, Regime R>
struct TreeNode {
  using Shape = TreeShape<K, G>;
  using KeyObj = std::conditional_t<R == Regime::kFullyAtomic, AtomicCObject<Shape::kWords>, CObject<Shape::kWords>>;
  /// The version word of the elementwise layout (unused in the fully atomic one).
  std::uint64_t lock;
  KeyObj keys;
  CObject<Shape::kValueWords> values;

  DUET_HD DUET_INLINE std::uint64_t* version() {
    if constexpr (R == Regime::kFullyAtomic) return &keys.version;
    else return &lock;
  }
  DUET_HD DUET_INLINE CObject<Shape::kWords>& key_data() {
    if constexpr (R == Regime::kFullyAtomic) return keys.data;
    else return keys;
  }
};

/// The tree's one shared word: the root node's address.
struct TreeRoot {
  std::uint64_t node;
};

/// Outcome of a tree request: status, and the value for kFound.
struct TreeResult {
  OpStatus status;
  std::uint64_t value;
};

template <unsigned K, class Group, Regime R>
struct BLinkTree {
  using Shape = TreeShape<K, Group::kSize>;
  using Node = TreeNode<K, Group::kSize, R>;
  using KFrag = Fragment<Shape::kWords, Group>;
  using VFrag = Fragment<Shape::kValueWords, Group>;

  /// Host-side decoding of a stored word for the quiescent helpers: drops the bits above 48
  /// (a remote word's memory node id). Algorithm code decodes through the environment.
  DUET_HD static DUET_INLINE Node* ptr(std::uint64_t w) {
    return reinterpret_cast<Node*>(w & ((std::uint64_t(1) << 48) - 1));
  }
  DUET_HD static DUET_INLINE std::uint64_t word(const Node* n) { return reinterpret_cast<std::uint64_t>(n); }

  /// A node's decoded meta word, the same on every lane.
  struct Meta {
    ElementMask keys;
    unsigned level;
    bool infinite;
    std::uint64_t high;
    std::uint64_t right;
  };
  DUET_HD static DUET_INLINE Meta meta_of(const Group& g, const KFrag& f) {
    const std::uint64_t m = f.broadcast(g, Shape::kMeta);
    return {m & Shape::kKeyMask, static_cast<unsigned>((m >> Shape::kLevelShift) & 0xFF), (m & Shape::kInfinite) != 0,
            f.broadcast(g, Shape::kHigh), f.broadcast(g, Shape::kRight)};
  }
  DUET_HD static DUET_INLINE bool beyond(const Meta& m, std::uint64_t k) { return !m.infinite && k >= m.high; }
  DUET_HD static DUET_INLINE unsigned capacity(unsigned level) { return level == 0 ? Shape::kLeafCap : Shape::kInnerCap; }

  /// Makes n an empty leaf covering everything (host or device, before sharing).
  DUET_HD static void init_leaf(Node* n) {
    n->lock = 0;
    if constexpr (R == Regime::kFullyAtomic) n->keys.version = 0;
    for (unsigned i = 0; i < Shape::kWords; ++i) n->key_data().elem[i] = 0;
    for (unsigned i = 0; i < Shape::kValueWords; ++i) n->values.elem[i] = 0;
    n->key_data().elem[Shape::kMeta] = Shape::kInfinite;
  }

  /// Validated lock-free read of both c-objects (retries while a writer is inside, or when the
  /// version moved during the loads). mid (tests only; cods::NoStall, the default, compiles to
  /// the plain read) is called on every attempt after the keys are loaded, before the values.
  template <class Env, class Mid = NoStall>
  DUET_HD static void read(const Group& g, Env& env, Node* n, KFrag& fk, VFrag& fv, Mid&& mid = Mid{}) {
    std::uint64_t* ver = n->version();
    for (;;) {
      const std::uint64_t v1 = leader_load(g, ver, Order::acquire);
      if (v1 & 1) {
        spin_pause();
        continue;
      }
      fence(Order::acquire);  // every lane's loads come after the leader's v1
      fk.get(g, n->key_data());
      if constexpr (!std::is_same_v<std::decay_t<Mid>, NoStall>) {
        g.sync();
        mid();
        g.sync();
      }
      fv.get(g, n->values);
      fence(Order::acquire);
      g.sync();  // every lane's loads are done before the leader re-reads the word
      if (leader_load(g, ver, Order::relaxed) == v1) break;
    }
    env.node_read();
    remote_read(env, 2);  // the node with its version, then the version again
  }
  /// Read of a node whose lock the group holds (no writer can interfere).
  template <class Env>
  DUET_HD static DUET_INLINE void read_locked(const Group& g, Env& env, Node* n, KFrag& fk, VFrag& fv) {
    fk.get(g, n->key_data());
    fv.get(g, n->values);
    env.node_read();
    remote_read(env);
  }
  /// Writes both c-objects of a locked or unpublished node.
  DUET_HD static DUET_INLINE void write(const Group& g, Node* n, const KFrag& fk, const VFrag& fv) {
    fk.set(g, n->key_data());
    fv.set(g, n->values);
  }
  /// The same, counted as one write by a remote environment. mid (tests only; cods::NoStall, the
  /// default, compiles to the plain write) is called after the keys are stored and before the
  /// values, with the node still locked.
  template <class Env, class Mid = NoStall>
  DUET_HD static DUET_INLINE void write(const Group& g, Env& env, Node* n, const KFrag& fk, const VFrag& fv,
                                        Mid&& mid = Mid{}) {
    if constexpr (std::is_same_v<std::decay_t<Mid>, NoStall>) {
      write(g, n, fk, fv);
    } else {
      fk.set(g, n->key_data());
      fence(Order::release);
      g.sync();
      mid();
      g.sync();
      fv.set(g, n->values);
    }
    remote_write(env);
  }

  /// Lock-free descent to the node of `level` whose range holds k (level 0: the leaf).
  template <class Env>
  DUET_HD static Node* descend(const Group& g, Env& env, TreeRoot* root, std::uint64_t k, unsigned level) {
    KFrag fk;
    VFrag fv;
    Meta m;
    return descend(g, env, root, k, level, fk, fv, m);
  }
  /// The descent, leaving the node's last read in fk and fv and its meta in m.
  template <class Env>
  DUET_HD static DUET_INLINE Node* descend(const Group& g, Env& env, TreeRoot* root, std::uint64_t k, unsigned level,
                                           KFrag& fk, VFrag& fv, Meta& m) {
    Node* n = load_root(g, env, root);
    for (;;) {
      read(g, env, n, fk, fv);
      m = meta_of(g, fk);
      if (beyond(m, k)) {
        n = to_node<Node>(env, m.right);
        continue;
      }
      if (m.level <= level) return n;
      const int idx = popcount(fk.ballot(g, [k](std::uint64_t x, unsigned) { return x <= k; }) & m.keys) - 1;
      n = to_node<Node>(env, fv.broadcast(g, static_cast<unsigned>(idx < 0 ? 0 : idx)));
    }
  }

  /// GET: kFound with k's value, or kNotFound. Lock-free.
  template <class Env>
  DUET_HD static TreeResult get(const Group& g, Env& env, TreeRoot* root, std::uint64_t k) {
    KFrag fk;
    VFrag fv;
    Meta m;
    descend(g, env, root, k, 0, fk, fv, m);
    const int slot = fk.find(g, k, m.keys);
    if (slot < 0) return {OpStatus::kNotFound, 0};
    return {OpStatus::kFound, fv.broadcast(g, static_cast<unsigned>(slot))};
  }

  /// INSERT if absent: kNotFound inserted; kFound present (its value returned, nothing
  /// changed); kRetry the leaf was full and no node could be had (nothing changed).
  template <class Env>
  DUET_HD static TreeResult insert(const Group& g, Env& env, TreeRoot* root, std::uint64_t k, std::uint64_t v) {
    Node* spare = nullptr;
    for (;;) {
      Node* n = descend(g, env, root, k, 0);
      env.after_search();
      KFrag fk;
      VFrag fv;
      Meta m = lock_covering(g, env, n, k, fk, fv);
      const int slot = fk.find(g, k, m.keys);
      if (slot >= 0) {
        const std::uint64_t old = fv.broadcast(g, static_cast<unsigned>(slot));
        unlock(g, env, n->version());
        if (spare) env.discard(g, spare);
        return {OpStatus::kFound, old};
      }
      const unsigned count = static_cast<unsigned>(popcount(m.keys));
      const unsigned pos = static_cast<unsigned>(popcount(less(g, fk, k, m.keys)));
      if (count < Shape::kLeafCap) {
        insert_at(g, fk, count, pos, k);
        insert_at(g, fv, count, pos, v);
        put(g, fk, Shape::kMeta, pack_meta(count + 1, 0, m.infinite));
        write(g, env, n, fk, fv);
        unlock(g, env, n->version());
        if (spare) env.discard(g, spare);
        return {OpStatus::kNotFound, 0};
      }
      if (!spare) {
        // Allocate outside the lock, then start again (the leaf may have changed meanwhile).
        unlock(g, env, n->version());
        spare = env.template alloc<Node>(g);
        if (!spare) return {OpStatus::kRetry, 0};
        continue;
      }
      split_and_propagate(g, env, root, n, fk, fv, m, count, pos, k, v, spare);
      return {OpStatus::kNotFound, 0};
    }
  }

  /// REMOVE: kFound with the removed value, or kNotFound.
  template <class Env>
  DUET_HD static TreeResult remove(const Group& g, Env& env, TreeRoot* root, std::uint64_t k) {
    Node* n = descend(g, env, root, k, 0);
    env.after_search();
    KFrag fk;
    VFrag fv;
    const Meta m = lock_covering(g, env, n, k, fk, fv);
    const int slot = fk.find(g, k, m.keys);
    if (slot < 0) {
      unlock(g, env, n->version());
      return {OpStatus::kNotFound, 0};
    }
    const std::uint64_t old = fv.broadcast(g, static_cast<unsigned>(slot));
    const unsigned count = static_cast<unsigned>(popcount(m.keys));
    remove_at(g, fk, count, static_cast<unsigned>(slot));
    remove_at(g, fv, count, static_cast<unsigned>(slot));
    put(g, fk, Shape::kMeta, pack_meta(count - 1, 0, m.infinite));
    write(g, env, n, fk, fv);
    unlock(g, env, n->version());
    return {OpStatus::kFound, old};
  }

  /// Runs one request (unknown op: kInvalid, nothing changed).
  template <class Env>
  DUET_HD static TreeResult execute(const Group& g, Env& env, TreeRoot* root, Op op, std::uint64_t k,
                                    std::uint64_t v) {
    switch (op) {
      case Op::kGet: return get(g, env, root, k);
      case Op::kInsert: return insert(g, env, root, k, v);
      case Op::kRemove: return remove(g, env, root, k);
    }
    return {OpStatus::kInvalid, 0};
  }

  /// Host only, quiescent tree: calls visit(node) for every node, level by level from the root.
  template <class Visit>
  static void for_each_node(TreeRoot* root, Visit visit) {
    Node* leftmost = ptr(root->node);
    while (leftmost) {
      const std::uint64_t meta = leftmost->key_data().elem[Shape::kMeta];
      const unsigned level = static_cast<unsigned>((meta >> Shape::kLevelShift) & 0xFF);
      Node* below = level > 0 ? ptr(leftmost->values.elem[0]) : nullptr;
      for (Node* n = leftmost; n;) {
        Node* right = ptr(n->key_data().elem[Shape::kRight]);
        visit(n);
        n = right;
      }
      leftmost = below;
    }
  }

  /// Host only, quiescent tree: appends every (key, value) in key order, and returns false if
  /// the leaves break an invariant (keys out of order, a key outside its leaf's range).
  template <class Out>
  static bool entries(TreeRoot* root, Out& out) {
    Node* n = ptr(root->node);
    while (((n->key_data().elem[Shape::kMeta] >> Shape::kLevelShift) & 0xFF) != 0) n = ptr(n->values.elem[0]);
    bool ok = true, any = false;
    std::uint64_t last = 0;
    for (; n; n = ptr(n->key_data().elem[Shape::kRight])) {
      const std::uint64_t meta = n->key_data().elem[Shape::kMeta];
      const unsigned count = static_cast<unsigned>(popcount(meta & Shape::kKeyMask));
      if ((meta & Shape::kKeyMask) != prefix_mask(count)) ok = false;
      const bool inf = (meta & Shape::kInfinite) != 0;
      for (unsigned i = 0; i < count; ++i) {
        const std::uint64_t k = n->key_data().elem[i];
        if ((any && k <= last) || (!inf && k >= n->key_data().elem[Shape::kHigh])) ok = false;
        any = true;
        last = k;
        out.push_back({k, n->values.elem[i]});
      }
    }
    return ok;
  }

  /// Height of the tree (levels from the root down, leaves included). Host only.
  static unsigned height(TreeRoot* root) {
    return static_cast<unsigned>((ptr(root->node)->key_data().elem[Shape::kMeta] >> Shape::kLevelShift) & 0xFF) + 1;
  }

 private:
  /// The root node (one read of the root word over remote memory).
  template <class Env>
  DUET_HD static DUET_INLINE Node* load_root(const Group& g, Env& env, TreeRoot* root) {
    remote_read(env);
    return to_node<Node>(env, leader_load(g, &root->node, Order::acquire));
  }
  DUET_HD static DUET_INLINE std::uint64_t pack_meta(unsigned count, unsigned level, bool infinite) {
    return prefix_mask(count) | (std::uint64_t(level) << Shape::kLevelShift) | (infinite ? Shape::kInfinite : 0);
  }
  DUET_HD static DUET_INLINE ElementMask less(const Group& g, const KFrag& f, std::uint64_t k, ElementMask m) {
    return f.ballot(g, [k](std::uint64_t x, unsigned) { return x < k; }) & m;
  }

  /// Locks n, then moves right (unlock, lock the neighbour) until the locked node covers k.
  /// Returns with that node locked (n updated) and its fresh copy in fk/fv.
  template <class Env>
  DUET_HD static Meta lock_covering(const Group& g, Env& env, Node*& n, std::uint64_t k, KFrag& fk, VFrag& fv) {
    for (;;) {
      lock(g, env, n->version());
      read_locked(g, env, n, fk, fv);
      const Meta m = meta_of(g, fk);
      if (!beyond(m, k) || env.planted(Bug::kNoMoveRight)) return m;
      unlock(g, env, n->version());
      n = to_node<Node>(env, m.right);
    }
  }

  /// Splits the locked, full node n (fresh copy fk/fv, meta m, `count` entries) while adding
  /// (k, v) at pos; the upper half goes to `fresh`. Leaves n locked with its new content written
  /// and returns the separator (the upper half's first key).
  template <class Env>
  DUET_HD static std::uint64_t split(const Group& g, Env& env, Node* n, KFrag& fk, VFrag& fv, const Meta& m,
                                     unsigned count, unsigned pos, std::uint64_t k, std::uint64_t v, Node* fresh) {
    insert_at(g, fk, count, pos, k);  // may shift a key over the meta slot: meta is rewritten below
    insert_at(g, fv, count, pos, v);
    const unsigned total = count + 1, h = (total + 1) / 2;
    KFrag uk = split_off(g, fk, total, h);
    VFrag uv = split_off(g, fv, total, h);
    const std::uint64_t sep = uk.broadcast(g, 0);
    put(g, uk, Shape::kMeta, pack_meta(total - h, m.level, m.infinite));
    put(g, uk, Shape::kHigh, m.high);
    put(g, uk, Shape::kRight, m.right);
    write(g, env, fresh, uk, uv);
    fence(Order::release);  // the new node's content before the link that publishes it
    g.sync();
    put(g, fk, Shape::kMeta, pack_meta(h, m.level, false));
    put(g, fk, Shape::kHigh, sep);
    put(g, fk, Shape::kRight, to_word(env, fresh));
    write(g, env, n, fk, fv);
    return sep;
  }

  /// If n (locked, just split into n and `right` at sep) is the root, installs a new root above
  /// both. Returns true when it did (no parent entry is then needed).
  template <class Env>
  DUET_HD static bool grow_root(const Group& g, Env& env, TreeRoot* root, Node* n, unsigned level,
                                std::uint64_t sep, Node* right) {
    if (load_root(g, env, root) != n) return false;
    Node* top = env.template alloc<Node>(g);
    if (!top) return true;  // no node: the old root keeps its right link (still correct)
    KFrag fk;
    VFrag fv;
    fk.fill(0);
    fv.fill(0);
    put(g, fk, 0, 0);  // separator_0: the old root is the leftmost node, whose low is 0
    put(g, fk, 1, sep);
    put(g, fk, Shape::kMeta, pack_meta(2, level + 1, true));
    put(g, fv, 0, to_word(env, n));
    put(g, fv, 1, to_word(env, right));
    write(g, env, top, fk, fv);
    // Only the holder of the root's lock changes the root word, so a store is enough.
    leader_store(g, &root->node, to_word(env, top), Order::release);
    remote_write(env);
    return true;
  }

  /// Splits the locked leaf n adding (k, v), unlocks it and inserts the separators upward.
  template <class Env>
  DUET_HD static void split_and_propagate(const Group& g, Env& env, TreeRoot* root, Node* n, KFrag& fk, VFrag& fv,
                                          const Meta& m, unsigned count, unsigned pos, std::uint64_t k,
                                          std::uint64_t v, Node* fresh) {
    std::uint64_t sep = split(g, env, n, fk, fv, m, count, pos, k, v, fresh);
    bool done = grow_root(g, env, root, n, 0, sep, fresh);
    unlock(g, env, n->version());
    Node* child = fresh;
    for (unsigned level = 1; !done; ++level) {
      // The parent level may not exist yet: the root's splitter is installing it.
      Node* top = nullptr;
      for (int wait = 0; wait < (1 << 14); ++wait) {
        top = load_root(g, env, root);
        KFrag tk;
        VFrag tv;
        read(g, env, top, tk, tv);
        if (meta_of(g, tk).level >= level) break;
        top = nullptr;
        spin_pause();
      }
      if (!top) return;  // the entry is skipped; right links keep the tree correct
      Node* p = descend(g, env, root, sep, level);
      KFrag pk;
      VFrag pv;
      const Meta pm = lock_covering(g, env, p, sep, pk, pv);
      const unsigned pc = static_cast<unsigned>(popcount(pm.keys));
      const unsigned ppos = static_cast<unsigned>(popcount(less(g, pk, sep, pm.keys)));
      if (pk.find(g, sep, pm.keys) >= 0) {  // already there (cannot happen: separators are unique)
        unlock(g, env, p->version());
        return;
      }
      if (pc < Shape::kInnerCap) {
        insert_at(g, pk, pc, ppos, sep);
        insert_at(g, pv, pc, ppos, to_word(env, child));
        put(g, pk, Shape::kMeta, pack_meta(pc + 1, level, pm.infinite));
        write(g, env, p, pk, pv);
        unlock(g, env, p->version());
        return;
      }
      Node* more = env.template alloc<Node>(g);
      if (!more) {
        unlock(g, env, p->version());
        return;  // skipped, as above
      }
      sep = split(g, env, p, pk, pv, pm, pc, ppos, sep, to_word(env, child), more);
      done = grow_root(g, env, root, p, level, sep, more);
      unlock(g, env, p->version());
      child = more;
    }
  }
};

}  // namespace duet::cods::ds
