// The coalesced lazy list (dissertation 5.4, Alg. 16-19), written once for both processors.
//
// A node is one c-object of W = round_up(K + 2, G) words:
//   [ K keys, sorted, packed from slot 0 | presence bitset (bit i: slot i holds a key) | next ]
// and the node's lock is a bit of the bitset word (fully atomic nodes, K <= 30, keep their
// version there too: FoldedMeta), so K = 14 on 16 words is one 128 B node in both regimes.
// The next word is a node address whose low bit is the DELETED mark. Keys of a node are all
// smaller than the keys of its successor. The head node is never removed. In the elementwise
// regime it is a sentinel that holds no keys (a published node is never rewritten, and the head
// cannot be replaced: a hash set's heads are an array). In the fully atomic regime, where nodes
// are rewritten in place, the head holds keys like any node (kKeyedHead): it may be FOUND or GT
// with no prev, an update of it locks it alone (nothing precedes it, and it is never marked),
// and a removal that empties it leaves it empty and linked. A bucket of up to K keys is then
// one node, and a search reads one node fewer. No key value is reserved: presence is the
// bitset's.
//
// Search takes no lock: it gets each node (one coalesced read) and stops at the node that
// holds k (FOUND), the first node with a key above k (GT), or after the last node (END). In a
// list of n keys without removals it reads ceil(n/K) nodes when nodes are full, plus the
// keyless head in the elementwise regime.
// Updates lock prev and curr (and prev_prev in the elementwise END case), re-read them and
// check validated() (below), then:
//  * kFullyAtomic (Alg. 16/17): the node is rewritten in place by atomic sets, at most two per
//    update (a split writes the new upper node, then curr; a removal that empties curr marks
//    it, then relinks prev). Alg. 17 line 18 writes `set(curr_copy, curr_copy)`; the right
//    write is set(curr, curr_copy).
//  * kElementwise (Alg. 18/19): a published node's keys are never rewritten. An update builds
//    the new node(s) in nodes allocated before locking, marks the replaced node DELETED and
//    publishes with one atomic store to the predecessor's next. END into a prev with room
//    replaces prev through prev_prev; END into a full prev (or the head) only stores prev.next.
//
// Marking a replaced node matters: a writer that searched before the replacement may lock the
// old node as its prev and find it still pointing at its curr; without the mark it would
// validate and link its change into a node no reader can reach (the planted bug
// Bug::kUnmarkedReplacedNode, which the tests show caught).
//
// validated(prev, curr) holds, with both locked and freshly read, when prev is not marked,
// prev.next == curr (END: prev.next is null), curr is not marked, and every key of prev is
// below k. For the elementwise END with a copy of prev, prev_prev is locked too, unmarked, and
// points at prev. The in-node outcome is then decided on the fresh copies: k in curr (FOUND),
// a key above k in curr (GT), otherwise the search is redone.
//
// Fences: a new node is written with relaxed element stores, then a release fence and a
// release store of the pointer that publishes it; every get is followed by an acquire fence,
// so a reader that sees the pointer sees the node. Locks follow the sequence-lock rule of
// common.hpp. Readers retry a search whose deciding node (FOUND/GT: curr, END: prev) is
// marked: its content may be stale, and only an unmarked node is known to be linked.
//
// Locks are taken in list order, the first blocking, the rest bounded: a writer that cannot
// get the next lock releases what it holds and starts again, so no two writers deadlock.
// Allocation happens before locking; when the environment has no node the update returns
// kRetry having changed nothing.
//
// Remote memory (remote_env.hpp): every node word goes through to_node/to_word and every get,
// set, word store and lock call names the environment, which counts the round trip; for the
// CPU and GPU environments these compile to the plain casts and accesses (common.hpp).
#pragma once

#include <cstdint>
#include <type_traits>

#include "index/cods/common.hpp"

namespace duet::cods::ds {

template <unsigned K, unsigned G>
struct ListShape {
  static_assert(K >= 1 && K <= 61, "a list node holds 1 to 61 keys (the bitset and next share its c-object)");
  static constexpr unsigned kKeys = K;
  static constexpr unsigned kMeta = K;
  static constexpr unsigned kNext = K + 1;
  static constexpr unsigned kWords = round_up(K + 2, G);
  static constexpr ElementMask kKeyMask = prefix_mask(K);
};

/// The meta word of a fully atomic list node (K <= 30), which holds the node's presence bitset,
/// its lock and its version, so the node is its c-object alone (K = 14 on 16 words: 128 B, one
/// cache line pair on a CPU, one 128 B line on a GPU):
///   bits 0..K-1: presence (slot i holds a key);  bit 30: the lock (an updater holds it from
///   validation to release; readers ignore it);  bits 31..63: the version, odd while a set is
///   being written (readers retry), advanced by two per set.
/// Only the lock holder (or the builder of a node not yet published) stores the word; other
/// updaters only try a CAS that sets the lock bit.
struct FoldedMeta {
  static constexpr std::uint64_t kLock = std::uint64_t(1) << 30;
  static constexpr std::uint64_t kVersionOne = std::uint64_t(1) << 31;
  static constexpr std::uint64_t kVersion = ~((std::uint64_t(1) << 31) - 1);
  static constexpr unsigned kMaxKeys = 30;
};

/// A list node: its c-object alone, the lock a bit of the meta word (kLock) in both regimes, so
/// a K = 14 node on 16 words is 128 B. Fully atomic: the meta word is FoldedMeta (bitset, lock,
/// version). Elementwise: the bitset and, at bit 63, the lock; a published node's meta word is
/// never rewritten (updates copy the node), so only lock attempts and releases change it, and
/// readers mask the bit away (keys_of).
template <unsigned K, unsigned G, Regime R>
struct ListNode {
  using Shape = ListShape<K, G>;
  static_assert(R == Regime::kElementwise || K <= FoldedMeta::kMaxKeys,
                "a fully atomic list node holds 1 to 30 keys (its bitset shares a word with the lock and version)");
  static constexpr std::uint64_t kLock =
      R == Regime::kFullyAtomic ? FoldedMeta::kLock : std::uint64_t(1) << 63;  // above the K <= 61 bits
  CObject<Shape::kWords> obj;

  DUET_HD DUET_INLINE CObject<Shape::kWords>& data() { return obj; }
  DUET_HD DUET_INLINE std::uint64_t* meta() { return &obj.elem[Shape::kMeta]; }
};

// The 14-key node of the GPU's half warp fits one 128 B line in both regimes (issue 18, item 5).
static_assert(sizeof(ListNode<14, 16, Regime::kFullyAtomic>) == 128, "K = 14 fully atomic node is 128 B");
static_assert(sizeof(ListNode<14, 1, Regime::kFullyAtomic>) == 128, "K = 14 fully atomic node is 128 B");
static_assert(sizeof(ListNode<6, 8, Regime::kFullyAtomic>) == 64, "K = 6 fully atomic node is 64 B");
static_assert(sizeof(ListNode<14, 16, Regime::kElementwise>) == 128, "K = 14 elementwise node is 128 B");
static_assert(sizeof(ListNode<14, 1, Regime::kElementwise>) == 128, "K = 14 elementwise node is 128 B");

/// The list algorithm over nodes of K keys, for a Group in regime R. Stateless: the list is
/// its head node, which the caller owns (a hash set is an array of heads).
template <unsigned K, class Group, Regime R>
struct LazyList {
  using Shape = ListShape<K, Group::kSize>;
  using Node = ListNode<K, Group::kSize, R>;
  using Frag = Fragment<Shape::kWords, Group>;
  static constexpr unsigned kW = Shape::kWords;

  enum class Where : std::uint8_t { kFound, kGreater, kEnd };
  /// What search() found. stale: the deciding node was marked when read.
  struct Position {
    Where where;
    Node* prev_prev;  ///< predecessor of prev (null when prev is the head or null)
    Node* prev;       ///< null when curr is the (keyed) head
    Node* curr;       ///< null at END
    bool stale;
  };

  /// Host-side decoding of a stored word, for the quiescent helpers below: drops the DELETED
  /// mark and the bits above 48 (a remote word's memory node id; x86-64 user addresses are
  /// below 2^47). Algorithm code decodes through the environment (to_node).
  DUET_HD static DUET_INLINE Node* ptr(std::uint64_t w) {
    return reinterpret_cast<Node*>(w & ((std::uint64_t(1) << 48) - 1) & ~kMarked);
  }

  static constexpr bool kFullyAtomic = R == Regime::kFullyAtomic;
  /// The head holds keys (fully atomic regime only; see the file comment).
  static constexpr bool kKeyedHead = kFullyAtomic;
  static constexpr unsigned kDataBytes = sizeof(CObject<kW>);

  /// One coalesced get of node n into f (atomic in the fully atomic regime: a sequence-lock
  /// read of the meta word around the element loads; a change of the lock bit alone does not
  /// force a retry, a set in progress or completed does).
  /// mid (tests only; cods::NoStall, the default, compiles to the plain read) is called on every
  /// attempt halfway through the element loads: after those below kW / 2, before the others.
  template <class Env, class Mid = NoStall>
  DUET_HD static DUET_INLINE void read(const Group& g, Env& env, Node* n, Frag& f, Mid&& mid = Mid{}) {
    if constexpr (R == Regime::kFullyAtomic) {
      for (;;) {
        const std::uint64_t v1 = leader_load(g, n->meta(), Order::acquire);
        if (v1 & FoldedMeta::kVersionOne) {  // odd version: a set is being written
          spin_pause();
          continue;
        }
        fence(Order::acquire);  // every lane: its element loads come after the leader's v1
        get_elements(g, n, f, mid);
        fence(Order::acquire);
        g.sync();  // every lane's loads are done before the leader re-reads the word
        const std::uint64_t v2 = leader_load(g, n->meta(), Order::relaxed);
        if (((v1 ^ v2) & ~FoldedMeta::kLock) == 0) break;
      }
    } else {
      get_elements(g, n, f, mid);
      fence(Order::acquire);
    }
    env.node_read();
    remote_read(env, get_trips(kFullyAtomic, kDataBytes));
  }
  /// Writes f into n: in the fully atomic regime an atomic set by the holder of n's lock (or the
  /// builder of an unpublished node): version made odd, the elements but the meta word stored,
  /// then the meta word with f's bitset, the version advanced to even and the lock bit kept.
  /// Elementwise, only into a node not yet published (the publishing store orders it).
  /// mid (tests only; cods::NoStall, the default, compiles to the plain write) is called
  /// halfway through the element stores: after those below kW / 2, before the others (fully
  /// atomic: with the version odd, before the meta word's final store).
  template <class Env, class Mid = NoStall>
  DUET_HD static DUET_INLINE void write(const Group& g, Env& env, Node* n, const Frag& f, Mid&& mid = Mid{}) {
    constexpr bool kStall = !std::is_same_v<std::decay_t<Mid>, NoStall>;
    if constexpr (R == Regime::kFullyAtomic) {
      if (kDataBytes > 64) remote_cas(env);  // the version word
      const std::uint64_t cur = leader_load(g, n->meta(), Order::relaxed);
      if (g.is_leader()) atomic_store(n->meta(), cur + FoldedMeta::kVersionOne, Order::relaxed);
      g.sync();
      fence(Order::seq_cst);  // every lane: the odd version is ordered before its element stores
DUET_UNROLL
      for (unsigned j = 0; j < Frag::kPerLane; ++j) {
        const unsigned i = Frag::index(g, j);
        if (i != Shape::kMeta && (!kStall || i < kW / 2)) atomic_store(&n->obj.elem[i], f.e[j], Order::relaxed);
      }
      if constexpr (kStall) {
        fence(Order::release);
        g.sync();
        mid();
        g.sync();
        for (unsigned j = 0; j < Frag::kPerLane; ++j) {
          const unsigned i = Frag::index(g, j);
          if (i != Shape::kMeta && i >= kW / 2) atomic_store(&n->obj.elem[i], f.e[j], Order::relaxed);
        }
      }
      const std::uint64_t bits = f.broadcast(g, Shape::kMeta) & Shape::kKeyMask;
      fence(Order::release);
      g.sync();
      const std::uint64_t next =
          ((cur + 2 * FoldedMeta::kVersionOne) & FoldedMeta::kVersion) | (cur & FoldedMeta::kLock) | bits;
      if (g.is_leader()) atomic_store(n->meta(), next, Order::release);
      g.sync();
    } else if constexpr (kStall) {
      f.set(g, n->obj, mid);
    } else {
      f.set(g, n->obj);
    }
    remote_write(env, set_trips(kFullyAtomic, kDataBytes));
  }
  /// Stores one word of a locked node (elementwise regime: next pointers and marks).
  template <class Env>
  DUET_HD static DUET_INLINE void store_next(const Group& g, Env& env, Node* n, std::uint64_t v) {
    leader_store(g, &n->data().elem[Shape::kNext], v, Order::release);
    remote_write(env);
  }

  DUET_HD static DUET_INLINE ElementMask keys_of(const Group& g, const Frag& f) {
    return f.broadcast(g, Shape::kMeta) & Shape::kKeyMask;
  }
  DUET_HD static DUET_INLINE ElementMask greater(const Group& g, const Frag& f, std::uint64_t k, ElementMask m) {
    return f.ballot(g, [k](std::uint64_t x, unsigned) { return x > k; }) & m;
  }
  DUET_HD static DUET_INLINE ElementMask less(const Group& g, const Frag& f, std::uint64_t k, ElementMask m) {
    return f.ballot(g, [k](std::uint64_t x, unsigned) { return x < k; }) & m;
  }

  /// Initializes a head (or any node) as empty with no successor. Host or device, before sharing.
  DUET_HD static void init_head(Node* head) {
    for (unsigned i = 0; i < kW; ++i) head->data().elem[i] = 0;
  }

  /// Lock-free search for k from head. Costs one get per node visited.
  template <class Env>
  DUET_HD static Position search(const Group& g, Env& env, Node* head, std::uint64_t k) {
    Node* pp = nullptr;
    Node* prev = head;
    Frag fp;
    read(g, env, prev, fp);
    if constexpr (kKeyedHead) {  // the head decides alone; it is never marked
      const ElementMask m = keys_of(g, fp);
      if (fp.match(g, k, m)) return {Where::kFound, nullptr, nullptr, head, false};
      if (greater(g, fp, k, m)) return {Where::kGreater, nullptr, nullptr, head, false};
    }
    for (;;) {
      if (env.stuck()) return {Where::kEnd, pp, prev, nullptr, true};  // tests only: see cpu_env.hpp
      const std::uint64_t nx = fp.broadcast(g, Shape::kNext);
      Node* curr = to_node<Node>(env, nx);
      if (curr == nullptr) return {Where::kEnd, pp, prev, nullptr, (nx & kMarked) != 0};
      Frag fc;
      read(g, env, curr, fc);
      const bool marked = (fc.broadcast(g, Shape::kNext) & kMarked) != 0;
      const ElementMask m = keys_of(g, fc);
      if (fc.match(g, k, m)) return {Where::kFound, pp, prev, curr, marked};
      if (greater(g, fc, k, m)) return {Where::kGreater, pp, prev, curr, marked};
      pp = prev;
      prev = curr;
      fp = fc;
    }
  }

  /// Contains: kFound when k is in the list at some instant during the call, else kNotFound.
  /// Lock-free reads; a search that ends on a marked node is redone. (kRetry only when a test
  /// environment reports the operation stuck.)
  template <class Env>
  DUET_HD static OpStatus lookup(const Group& g, Env& env, Node* head, std::uint64_t k) {
    for (;;) {
      const Position p = search(g, env, head, k);
      if (!p.stale) return p.where == Where::kFound ? OpStatus::kFound : OpStatus::kNotFound;
      if (env.stuck()) return OpStatus::kRetry;
      spin_pause();
    }
  }
  template <class Env>
  DUET_HD static bool contains(const Group& g, Env& env, Node* head, std::uint64_t k) {
    return lookup(g, env, head, k) == OpStatus::kFound;
  }

  /// Inserts k if absent. kNotFound: inserted; kFound: present, nothing changed; kRetry: a node
  /// was needed and the environment had none, nothing changed.
  template <class Env>
  DUET_HD static OpStatus insert(const Group& g, Env& env, Node* head, std::uint64_t k) {
    constexpr unsigned kSpares = R == Regime::kElementwise ? 2 : 1;
    Node* spare[2] = {nullptr, nullptr};
    OpStatus result = OpStatus::kRetry;
    for (;;) {
      if (env.stuck()) break;  // kRetry, nothing changed (tests only)
      const Position p = search(g, env, head, k);
      if (p.stale) {
        spin_pause();
        continue;
      }
      if (p.where == Where::kFound) {
        result = OpStatus::kFound;
        break;
      }
      env.after_search();
      bool short_of_nodes = false;
      for (unsigned i = 0; i < kSpares; ++i) {
        if (!spare[i]) spare[i] = env.template alloc<Node>(g);
        if (!spare[i]) short_of_nodes = true;
      }
      if (short_of_nodes) break;  // kRetry, nothing changed
      const int r =
          p.where == Where::kGreater ? insert_gt(g, env, head, p, k, spare) : insert_end(g, env, head, p, k, spare);
      if (r < 0) {
        spin_pause();
        continue;
      }
      result = r == 1 ? OpStatus::kNotFound : OpStatus::kFound;
      break;
    }
    for (unsigned i = 0; i < 2; ++i)
      if (spare[i]) env.discard(g, spare[i]);
    return result;
  }

  /// Removes k if present. kFound: removed; kNotFound: absent.
  template <class Env>
  DUET_HD static OpStatus remove(const Group& g, Env& env, Node* head, std::uint64_t k) {
    Node* spare = nullptr;
    OpStatus result = OpStatus::kRetry;
    for (;;) {
      if (env.stuck()) break;  // kRetry, nothing changed (tests only)
      const Position p = search(g, env, head, k);
      if (p.stale) {
        spin_pause();
        continue;
      }
      if (p.where != Where::kFound) {
        result = OpStatus::kNotFound;
        break;
      }
      env.after_search();
      if (R == Regime::kElementwise && !spare) {
        spare = env.template alloc<Node>(g);
        if (!spare) break;  // kRetry, nothing changed
      }
      const int r = remove_found(g, env, p, k, spare);
      if (r < 0) {
        spin_pause();
        continue;
      }
      result = r == 1 ? OpStatus::kFound : OpStatus::kNotFound;
      break;
    }
    if (spare) env.discard(g, spare);
    return result;
  }

  /// Frees every node reachable from head (not head itself). Host only, quiescent list.
  template <class Free>
  static void destroy_chain(Node* head, Free free_node) {
    Node* n = ptr(head->data().elem[Shape::kNext]);
    while (n) {
      Node* next = ptr(n->data().elem[Shape::kNext]);
      free_node(n);
      n = next;
    }
  }

  /// Appends the keys of the list in order (host only, quiescent list). For tests.
  template <class Out>
  static void keys(Node* head, Out& out) {
    for (Node* n = kKeyedHead ? head : ptr(head->data().elem[Shape::kNext]); n; n = ptr(n->data().elem[Shape::kNext])) {
      const std::uint64_t meta = n->data().elem[Shape::kMeta];
      for (unsigned i = 0; i < K; ++i)
        if ((meta >> i) & 1) out.push_back(n->data().elem[i]);
    }
  }

 private:
  /// f.get of n's c-object, calling mid (unless NoStall) between the elements below kW / 2 and
  /// the others.
  template <class Mid>
  DUET_HD static DUET_INLINE void get_elements(const Group& g, Node* n, Frag& f, Mid&& mid) {
    if constexpr (std::is_same_v<std::decay_t<Mid>, NoStall>) {
      f.get(g, n->obj);
    } else {
      for (unsigned j = 0; j < Frag::kPerLane; ++j)
        if (Frag::index(g, j) < kW / 2) f.e[j] = atomic_load(&n->obj.elem[Frag::index(g, j)], Order::relaxed);
      g.sync();
      mid();
      g.sync();
      for (unsigned j = 0; j < Frag::kPerLane; ++j)
        if (Frag::index(g, j) >= kW / 2) f.e[j] = atomic_load(&n->obj.elem[Frag::index(g, j)], Order::relaxed);
    }
  }

  // Node locks: the meta word's lock bit (Node::kLock), taken by a leader CAS and released by
  // the holder's store. Each attempt is one CAS and each release one write over remote memory.
  template <class Env>
  DUET_HD static DUET_INLINE bool try_lock_node(const Group& g, Env& env, Node* n) {
    remote_cas(env);
    bool got = false;
    if (g.is_leader()) {
      std::uint64_t v = atomic_load(n->meta(), Order::relaxed);
      got = !(v & Node::kLock) && atomic_cas(n->meta(), v, v | Node::kLock, Order::acquire);
    }
    got = g.shfl(got, 0);
    g.sync();
    fence(Order::seq_cst);  // the lock is ordered before every access of the critical section
    return got;
  }
  /// Blocking (the caller holds no other lock).
  template <class Env>
  DUET_HD static DUET_INLINE void lock_node(const Group& g, Env& env, Node* n) {
    while (!try_lock_node(g, env, n)) spin_pause();
  }
  /// Bounded, while holding others: false after a bounded spin (the caller releases and retries).
  template <class Env>
  DUET_HD static DUET_INLINE bool lock_node_bounded(const Group& g, Env& env, Node* n) {
    for (int i = 0; i < 256; ++i) {
      if (try_lock_node(g, env, n)) return true;
      spin_pause();
    }
    return false;
  }
  template <class Env>
  DUET_HD static DUET_INLINE void unlock_node(const Group& g, Env& env, Node* n) {
    remote_write(env);
    fence(Order::release);
    g.sync();
    if (g.is_leader())  // only the holder stores the word
      atomic_store(n->meta(), atomic_load(n->meta(), Order::relaxed) & ~Node::kLock, Order::release);
    g.sync();
  }

  /// Releases locks taken in order (last first).
  template <class Env>
  DUET_HD static DUET_INLINE void unlock_all(const Group& g, Env& env, Node* const* held, unsigned n) {
    for (unsigned i = n; i-- > 0;) unlock_node(g, env, held[i]);
  }
  /// Locks `nodes` in order: the first blocking, the rest bounded. False (nothing held) on failure.
  template <class Env>
  DUET_HD static DUET_INLINE bool lock_all(const Group& g, Env& env, Node* const* nodes, unsigned n) {
    lock_node(g, env, nodes[0]);
    for (unsigned i = 1; i < n; ++i) {
      if (!lock_node_bounded(g, env, nodes[i])) {
        unlock_all(g, env, nodes, i);
        return false;
      }
    }
    return true;
  }

  /// Every key of the node in f is below k (true for a node with no keys).
  DUET_HD static DUET_INLINE bool all_below(const Group& g, const Frag& f, std::uint64_t k) {
    return (f.ballot(g, [k](std::uint64_t x, unsigned) { return x >= k; }) & keys_of(g, f)) == 0;
  }

  /// Locks held = {p.prev, p.curr}, reads them into fp and fc (cn: curr's next word) and checks
  /// that curr is still prev's unmarked successor and every key of prev is below k. False, with
  /// nothing held, when a lock cannot be had or the check fails (unless kNoRevalidation is planted).
  template <class Env>
  DUET_HD static DUET_INLINE bool lock_linked_pair(const Group& g, Env& env, const Position& p, std::uint64_t k,
                                                   Node* const* held, Frag& fp, Frag& fc, std::uint64_t& cn) {
    if (!lock_all(g, env, held, 2)) return false;
    read(g, env, p.prev, fp);
    read(g, env, p.curr, fc);
    const std::uint64_t pn = fp.broadcast(g, Shape::kNext);
    cn = fc.broadcast(g, Shape::kNext);
    const bool linked = !(pn & kMarked) && to_node<Node>(env, pn) == p.curr && !(cn & kMarked) && all_below(g, fp, k);
    if (!linked && !env.planted(Bug::kNoRevalidation)) {
      unlock_all(g, env, held, 2);
      return false;
    }
    return true;
  }

  /// Locks the pair an update of curr needs (lock_linked_pair), or the keyed head alone when it
  /// is curr (p.prev null): nothing precedes the head and it is never marked, so it needs no
  /// check. held/nheld receive what is locked; fp prev's fresh copy (empty when there is no
  /// prev), fc and cn curr's fresh copy and next word.
  template <class Env>
  DUET_HD static DUET_INLINE bool lock_curr(const Group& g, Env& env, const Position& p, std::uint64_t k,
                                            Node** held, unsigned& nheld, Frag& fp, Frag& fc, std::uint64_t& cn) {
    if (kKeyedHead && p.prev == nullptr) {
      held[0] = p.curr;
      nheld = 1;
      fp.fill(0);
      lock_node(g, env, p.curr);
      read(g, env, p.curr, fc);
      cn = fc.broadcast(g, Shape::kNext);
      return true;
    }
    held[0] = p.prev;
    held[1] = p.curr;
    nheld = 2;
    return lock_linked_pair(g, env, p, k, held, fp, fc, cn);
  }

  /// Writes the bitset of a node holding n packed keys, and its next word.
  DUET_HD static DUET_INLINE void set_meta(const Group& g, Frag& f, unsigned n, std::uint64_t next) {
    put(g, f, Shape::kMeta, prefix_mask(n));
    put(g, f, Shape::kNext, next);
  }

  /// Builds the update of curr (fresh copy fc, n keys) with k inserted at pos: fc becomes the
  /// lower node; when curr is full, *upper receives the upper part (to go into a new node) and
  /// true is returned. `next` is curr's successor; `upper_node` the word of the new node.
  DUET_HD static bool add_key(const Group& g, Frag& fc, Frag& upper, unsigned n, unsigned pos, std::uint64_t k,
                              std::uint64_t next, std::uint64_t upper_node) {
    insert_at(g, fc, n, pos, k);  // n <= K < kW - 1: the shifted key may cover the bitset slot
    if (n < K) {
      set_meta(g, fc, n + 1, next);
      return false;
    }
    // Copy-and-partition: K + 1 keys; the lower node keeps the first ceil((K+1)/2).
    const unsigned h = (K + 2) / 2;
    upper = split_off(g, fc, K + 1, h);
    set_meta(g, upper, K + 1 - h, next);
    set_meta(g, fc, h, upper_node);
    return true;
  }

  /// GT: k goes into curr, or at the end of the keyed head when that is prev, has room and k is
  /// below every key of curr (so the bucket's first node fills before its second).
  /// Returns 1 inserted, 0 found present, -1 retry.
  template <class Env>
  DUET_HD static int insert_gt(const Group& g, Env& env, Node* head, const Position& p, std::uint64_t k,
                               Node** spare) {
    Node* held[2];
    unsigned nheld;
    Frag fp, fc;
    std::uint64_t cn;
    if (!lock_curr(g, env, p, k, held, nheld, fp, fc, cn)) return -1;
    const ElementMask m = keys_of(g, fc);
    if (fc.match(g, k, m)) {
      unlock_all(g, env, held, nheld);
      return 0;
    }
    if (!greater(g, fc, k, m)) {  // k now belongs further on
      unlock_all(g, env, held, nheld);
      return -1;
    }
    if (kKeyedHead && p.prev == head && !less(g, fc, k, m)) {  // k below every key of curr
      const unsigned np = static_cast<unsigned>(popcount(keys_of(g, fp)));
      if (np < K) {
        const std::uint64_t head_next = fp.broadcast(g, Shape::kNext);  // curr
        insert_at(g, fp, np, np, k);
        set_meta(g, fp, np + 1, head_next);
        write(g, env, head, fp);
        unlock_all(g, env, held, nheld);
        return 1;
      }
    }
    const unsigned n = static_cast<unsigned>(popcount(m));
    const unsigned pos = static_cast<unsigned>(popcount(less(g, fc, k, m)));
    const std::uint64_t next = cn & ~kMarked;
    Frag upper;
    if constexpr (R == Regime::kFullyAtomic) {
      if (add_key(g, fc, upper, n, pos, k, next, to_word(env, spare[0]))) {
        write(g, env, spare[0], upper);  // not reachable until curr is set
        spare[0] = nullptr;
      }
      write(g, env, p.curr, fc);
      unlock_all(g, env, held, nheld);
    } else {
      Node* copy = spare[0];
      if (add_key(g, fc, upper, n, pos, k, next, to_word(env, spare[1]))) {
        write(g, env, spare[1], upper);
        spare[1] = nullptr;
      }
      write(g, env, copy, fc);
      spare[0] = nullptr;
      if (!env.planted(Bug::kUnmarkedReplacedNode)) store_next(g, env, p.curr, cn | kMarked);
      store_next(g, env, p.prev, to_word(env, copy));  // publishes the copy (and the new upper node)
      unlock_all(g, env, held, 2);
      env.retire(g, p.curr);
    }
    return 1;
  }

  /// END: k goes after every key. Returns 1 inserted, 0 found present, -1 retry.
  template <class Env>
  DUET_HD static int insert_end(const Group& g, Env& env, Node* head, const Position& p, std::uint64_t k,
                                Node** spare) {
    // The elementwise regime may replace prev with a copy, published through prev_prev.
    const bool via_pp = R == Regime::kElementwise && p.prev != head;
    Node* held[2] = {via_pp ? p.prev_prev : p.prev, p.prev};
    const unsigned nheld = via_pp ? 2 : 1;
    if (!lock_all(g, env, held, nheld)) return -1;
    Frag fp;
    read(g, env, p.prev, fp);
    const std::uint64_t pn = fp.broadcast(g, Shape::kNext);
    bool linked = pn == 0 && all_below(g, fp, k);
    if (via_pp) {
      Frag fpp;
      read(g, env, p.prev_prev, fpp);
      const std::uint64_t ppn = fpp.broadcast(g, Shape::kNext);
      linked = linked && !(ppn & kMarked) && to_node<Node>(env, ppn) == p.prev;
    }
    if (!linked && !env.planted(Bug::kNoRevalidation)) {
      unlock_all(g, env, held, nheld);
      return -1;
    }
    const ElementMask m = keys_of(g, fp);
    if (fp.match(g, k, m)) {
      unlock_all(g, env, held, nheld);
      return 0;
    }
    const unsigned n = static_cast<unsigned>(popcount(m));
    if ((!kKeyedHead && p.prev == head) || n == K) {
      // A new last node holding only k, linked from prev.
      Node* fresh = spare[0];
      spare[0] = nullptr;
      Frag f;
      f.fill(0);
      put(g, f, 0, k);
      set_meta(g, f, 1, 0);
      write(g, env, fresh, f);
      if constexpr (R == Regime::kFullyAtomic) {
        put(g, fp, Shape::kNext, to_word(env, fresh));
        write(g, env, p.prev, fp);
      } else {
        store_next(g, env, p.prev, to_word(env, fresh));
      }
      unlock_all(g, env, held, nheld);
      return 1;
    }
    insert_at(g, fp, n, n, k);
    set_meta(g, fp, n + 1, 0);
    if constexpr (R == Regime::kFullyAtomic) {
      write(g, env, p.prev, fp);
      unlock_all(g, env, held, nheld);
    } else {
      Node* copy = spare[0];
      spare[0] = nullptr;
      write(g, env, copy, fp);
      if (!env.planted(Bug::kUnmarkedReplacedNode)) store_next(g, env, p.prev, kMarked);
      store_next(g, env, p.prev_prev, to_word(env, copy));
      unlock_all(g, env, held, nheld);
      env.retire(g, p.prev);
    }
    return 1;
  }

  /// FOUND: removes k from curr. Returns 1 removed, 0 absent, -1 retry.
  template <class Env>
  DUET_HD static int remove_found(const Group& g, Env& env, const Position& p, std::uint64_t k, Node*& spare) {
    Node* held[2];
    unsigned nheld;
    Frag fp, fc;
    std::uint64_t cn;
    if (!lock_curr(g, env, p, k, held, nheld, fp, fc, cn)) return -1;
    const ElementMask m = keys_of(g, fc);
    const int pos = fc.find(g, k, m);
    if (pos < 0) {  // k moved (a split) or went: search again
      unlock_all(g, env, held, nheld);
      return -1;
    }
    const unsigned n = static_cast<unsigned>(popcount(m));
    const std::uint64_t next = cn & ~kMarked;
    if (n == 1 && (!kKeyedHead || p.prev != nullptr)) {
      // curr becomes empty: mark it, then unlink it from prev. (An emptied keyed head stays.)
      if constexpr (R == Regime::kFullyAtomic) {
        remove_at(g, fc, n, static_cast<unsigned>(pos));
        set_meta(g, fc, 0, next | kMarked);
        write(g, env, p.curr, fc);
        put(g, fp, Shape::kNext, next);
        write(g, env, p.prev, fp);
      } else {
        store_next(g, env, p.curr, next | kMarked);
        store_next(g, env, p.prev, next);
      }
      unlock_all(g, env, held, 2);
      env.retire(g, p.curr);
      return 1;
    }
    remove_at(g, fc, n, static_cast<unsigned>(pos));
    set_meta(g, fc, n - 1, next);
    if constexpr (R == Regime::kFullyAtomic) {
      write(g, env, p.curr, fc);  // Alg. 17 line 18, fixed: set(curr, curr_copy)
      unlock_all(g, env, held, nheld);
    } else {
      Node* copy = spare;
      spare = nullptr;
      write(g, env, copy, fc);
      if (!env.planted(Bug::kUnmarkedReplacedNode)) store_next(g, env, p.curr, cn | kMarked);
      store_next(g, env, p.prev, to_word(env, copy));
      unlock_all(g, env, held, 2);
      env.retire(g, p.curr);
    }
    return 1;
  }
};

}  // namespace duet::cods::ds
