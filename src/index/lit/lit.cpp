// LIT, CPU version. See lit.hpp for the contract and docs/lit.md for the design notes.
//
// A node's key and value never change: a node is one cache line, and an update replaces it.
// Linearization points:
//  * INSERT: the label of the new version of prev.next that links the node;
//  * REMOVE: the label of the version that marks the node's next word DELETED (the node is
//    unlinked afterwards, by the remover or by whoever passes by);
//  * UPSERT of a present key: the label of the version that marks the old node's next word
//    REPLACED, pointing at the new node (which holds the old successor); the old node is then
//    unlinked like a removed one. UPSERT of an absent key: as INSERT;
//  * GET: its read of the next word of the node it returns (unmarked), or the read that showed
//    the key's last node marked DELETED or no node for the key;
//  * RANGE: the camera read that fixes its snapshot T; it then reads every object at T.
// A version is labelled before its installer returns and before anyone installs over it, so
// the label order is consistent with each object's version order.
#include "index/lit/lit.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>

#include "index/lit/common.hpp"
#include "index/lit/vcas.hpp"
#include "mem/epoch.hpp"
#include "mem/host_memory.hpp"

namespace duet::lit {

using detail::Camera;
using detail::VNode;
using detail::VObj;

namespace {

// In a next word: this node is logically gone, because it was removed (DELETED) or because
// the node the word points at replaced it (REPLACED).
constexpr std::uint64_t kDeletedBit = 1;
constexpr std::uint64_t kReplacedBit = 2;
constexpr std::uint64_t kMarks = kDeletedBit | kReplacedBit;
constexpr std::uint64_t kLevelTag = 1;   // in a slot word: points at a Level, not a marker
constexpr std::uint64_t kIdle = ~std::uint64_t{0};
constexpr std::uint64_t kPending = kIdle - 1;
constexpr unsigned kMaintainEvery = 64;

using u128 = unsigned __int128;

struct NodePool;

/// A data-layer node: an entry or a boundary marker, one cache line. Its key and value never
/// change; the first version of its next word is embedded (inline), so a node whose successor
/// never changed is read with one cache miss.
struct alignas(64) Node {
  std::uint64_t key;
  std::uint64_t value;  ///< entries only
  VObj next;
  VNode next0;
  std::uint32_t boundary;  ///< 1 for a boundary marker
  std::uint32_t refs = 0;  ///< markers: index slots pointing here (changed under the structure lock)
  NodePool* pool;          ///< where the node's memory returns

  Node(std::uint64_t k, bool is_marker, std::uint64_t v, Node* succ, NodePool* p)
      : key(k), value(v), boundary(is_marker ? 1 : 0), pool(p) {
    next0.init_inline(reinterpret_cast<std::uint64_t>(succ));
    next.head.store(&next0, std::memory_order_relaxed);
  }
};
static_assert(sizeof(Node) == 64, "a LIT node is one cache line");

/// Node memory: 64-byte aligned slots carved from chunks owned by the map (the general
/// allocator's aligned path is slow and its plain path splits nodes across cache lines).
/// Chunks are mapped directly (mem::map_zeroed) and double in size from 256 KiB to 64 MiB, so
/// a large map sits on transparent huge pages whatever the allocator did before (nodes are
/// reached by random pointer chasing, where TLB misses cost as much as cache misses).
/// Threads keep a private cache; freed nodes go to a shared list the caches refill from.
struct NodePool {
  static constexpr std::size_t kFirstChunkNodes = 4096, kMaxChunkNodes = std::size_t{1} << 20;
  std::mutex m;
  std::vector<std::pair<void*, std::size_t>> chunks;  ///< (memory, bytes)
  std::vector<Node*> freed;

  ~NodePool() {
    for (auto [c, bytes] : chunks) mem::unmap(c, bytes);
  }
  /// Moves up to `want` free slots into *cache, carving a new chunk when none are free.
  void refill(std::vector<Node*>* cache, std::size_t want) {
    std::lock_guard<std::mutex> lk(m);
    if (!freed.empty()) {
      const std::size_t n = std::min(want, freed.size());
      cache->insert(cache->end(), freed.end() - static_cast<std::ptrdiff_t>(n), freed.end());
      freed.resize(freed.size() - n);
      return;
    }
    const std::size_t nodes = std::min(kMaxChunkNodes, kFirstChunkNodes << std::min<std::size_t>(chunks.size(), 8));
    Node* c = static_cast<Node*>(mem::map_zeroed(nodes * sizeof(Node)));
    if (!c) throw std::bad_alloc();
    chunks.emplace_back(c, nodes * sizeof(Node));
    for (std::size_t i = nodes; i-- > 0;) cache->push_back(c + i);
  }
  void release(Node* n) {
    std::lock_guard<std::mutex> lk(m);
    freed.push_back(n);
  }
  void release_all(std::vector<Node*>* cache) {
    std::lock_guard<std::mutex> lk(m);
    freed.insert(freed.end(), cache->begin(), cache->end());
    cache->clear();
  }
};

inline Node* node_of(std::uint64_t word) { return reinterpret_cast<Node*>(word & ~kMarks); }
inline bool marked(std::uint64_t word) { return (word & kMarks) != 0; }

/// Epoch deleter of an unlinked node: its later versions, then its slot.
void delete_node(void* p) {
  Node* n = static_cast<Node*>(p);
  detail::free_chain(n->next.head.load(std::memory_order_relaxed));
  n->pool->release(n);
}

struct Level;

/// An index slot: a marker or a deeper level, versioned so a range query reads the index as of
/// its snapshot.
struct Slot {
  VObj obj;
  VNode v0;
};

/// One level of the index: `n` buckets over keys [a, a + w) through a monotone lookup
/// function; keys below a go to bucket 0, keys at or above a + w to bucket n - 1.
struct Level {
  std::uint64_t a = 0, w = 1, n = 1;
  std::uint64_t mul = 0;  ///< ceil(2^64 n / w); 0 means identity (n == w)
  std::uint32_t depth = 1;
  std::unique_ptr<Slot[]> slots;

  /// The bucket of key x. Rounding mul up makes the function overshoot the exact
  /// floor(n (x - a) / w) by at most one, so it stays monotone and no bucket is skipped.
  std::uint64_t index(std::uint64_t x) const {
    if (x < a) return 0;
    const std::uint64_t d = x - a;
    const std::uint64_t i = mul == 0 ? d : static_cast<std::uint64_t>((static_cast<u128>(d) * mul) >> 64);
    return i < n ? i : n - 1;
  }
  /// The least key of bucket i (0 for bucket 0), in O(1): index(x) >= i exactly when
  /// (x - a) * mul >= i * 2^64, so the least such x - a is ceil(i * 2^64 / mul). (Stepping
  /// from the estimate a + i w / n instead can take up to a bucket's width of steps, since
  /// the rounded-up mul moves bucket edges down: with wide buckets a resize never ended.)
  std::uint64_t min_key(std::uint64_t i) const {
    if (i == 0) return 0;
    constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
    if (mul == 0) return static_cast<u128>(a) + i > kMax ? kMax : a + i;  // identity: n == w
    const u128 d = ((static_cast<u128>(i) << 64) + mul - 1) / mul;
    const u128 x = static_cast<u128>(a) + d;
    return x > kMax ? kMax : static_cast<std::uint64_t>(x);
  }
};

std::unique_ptr<Level> make_level(std::uint64_t a, std::uint64_t w, std::uint64_t n, std::uint32_t depth) {
  auto L = std::make_unique<Level>();
  L->a = a;
  L->w = std::max<std::uint64_t>(w, 1);
  L->n = std::max<std::uint64_t>(1, std::min(n, L->w));
  L->depth = depth;
  if (L->n == L->w) {
    L->mul = 0;
  } else {
    const u128 m = ((static_cast<u128>(L->n) << 64) + L->w - 1) / L->w;
    L->mul = m >= (static_cast<u128>(1) << 64) ? 0 : static_cast<std::uint64_t>(m);
    if (L->mul == 0) L->n = L->w;  // (cannot happen for n < w, kept for safety)
  }
  L->slots = std::make_unique<Slot[]>(L->n);
  return L;
}

void set_slot(Slot& s, std::uint64_t word) {
  s.v0.init_inline(word);
  s.obj.head.store(&s.v0, std::memory_order_relaxed);
}

/// Where a key's bucket lookup ended.
struct Bucket {
  Node* marker = nullptr;
  Level* level = nullptr;
  std::uint64_t index = 0;
  std::uint32_t depth = 0;
};

/// What a data-layer search found: the first node at or after the target (curr, null at the
/// end) and its predecessor, plus the nodes walked from the bucket's marker.
struct Position {
  Node* prev;
  Node* curr;
  std::uint32_t steps;
};

/// Data-layer order: by key, a marker before the entry with the same key.
inline bool before(const Node* n, std::uint64_t key, bool marker_target) {
  if (n->key != key) return n->key < key;
  return marker_target ? false : n->boundary != 0;
}

}  // namespace

// to_string(Result) is in common.cpp, beside the batched LIT's outcome names.

// ---------------------------------------------------------------------------------------------

struct Map::Impl {
  Config cfg;
  Camera camera;
  NodePool pool;  // declared before epochs: the epochs' teardown returns nodes to it
  mem::EpochManager epochs;
  VObj root;
  VNode root0;
  Node* head = nullptr;  ///< marker of key 0: first node of the data layer, never removed

  struct alignas(64) Announce {
    std::atomic<std::uint64_t> ts{kIdle};
    std::atomic<bool> used{false};
  };
  std::unique_ptr<Announce[]> announces;
  std::atomic<std::size_t> announce_high{0};  ///< slots [0, high) may be in use
  std::mutex sessions_m;

  alignas(64) std::atomic<std::int64_t> entries{0};
  std::atomic<std::uint64_t> min_seen{std::numeric_limits<std::uint64_t>::max()};
  std::atomic<std::uint64_t> max_seen{0};
  std::atomic<std::uint64_t> retired{0};

  // Structure changes (split, resize, marker cleanup) are serialised by this lock; operations
  // only ever try_lock it.
  std::mutex structure_m;
  std::vector<std::unique_ptr<Level>> levels;  ///< every level ever installed (freed at teardown)
  struct Cleanup {
    std::uint64_t label;
    std::uint64_t epoch;
    std::vector<Node*> markers;
  };
  std::vector<Cleanup> cleanups;
  std::atomic<std::size_t> cleanups_pending{0};  ///< cleanups.size(), readable without the lock
  std::atomic<Level*> root_level{nullptr};       ///< the current root, readable unpinned (levels live on)
  /// Markers waiting in cleanups, with the label of the entry that owns each: a marker a later
  /// resize took and dropped again waits for that later resize's grace period, and is listed
  /// (so removed) once.
  std::unordered_map<Node*, std::uint64_t> pending_markers;
  std::atomic<std::uint64_t> splits{0}, resizes{0}, markers_removed{0}, max_depth{1};

  /// Oldest snapshot that is or may become in use: min(camera, announced snapshots), or 0
  /// while an announcement is being made.
  std::uint64_t compute_smin() {
    std::uint64_t m = camera.now.load(std::memory_order_seq_cst);
    const std::size_t hi = announce_high.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < hi; ++i) {
      const std::uint64_t a = announces[i].ts.load(std::memory_order_seq_cst);
      if (a == kPending) return 0;
      if (a != kIdle && a < m) m = a;
    }
    return m;
  }
};

/// Per-thread state shared by sessions and by the map's own structure calls.
struct Ctx {
  Map::Impl* m;
  std::unique_ptr<mem::EpochManager::Participant> ep;
  std::size_t announce = kIdle;
  std::uint64_t smin = 0;
  std::uint64_t retired = 0;
  std::int64_t entries_delta = 0;
  unsigned since_maintain = 0;
  std::vector<Node*> cache;  ///< free node slots of this thread

  Ctx(Map::Impl* map, std::unique_ptr<mem::EpochManager::Participant> p) : m(map), ep(std::move(p)) {}
  Ctx(Ctx&&) = default;
  ~Ctx() {
    if (m && !cache.empty()) m->pool.release_all(&cache);
  }

  Camera& cam() { return m->camera; }

  Node* new_node(std::uint64_t k, bool is_marker, std::uint64_t v, Node* succ) {
    if (cache.empty()) m->pool.refill(&cache, 256);
    Node* slot = cache.back();
    cache.pop_back();
    return new (slot) Node(k, is_marker, v, succ, &m->pool);
  }
  /// A node that was never published goes straight back to this thread's cache.
  void drop_unpublished(Node* n) {
    if (n) cache.push_back(n);
  }

  void after_install(VNode* n) { detail::truncate(ep.get(), n, smin, &retired); }

  /// Installs a new version holding `word` over o's head if the head still holds `expect`.
  bool vcas(VObj& o, std::uint64_t expect, std::uint64_t word) {
    VNode* h = detail::read_latest(cam(), o);
    if (h->val != expect) return false;
    auto* n = new detail::VNodeX(word);
    if (!detail::install(cam(), o, h, n)) {
      delete n;
      return false;
    }
    after_install(n);
    return true;
  }

  void retire_node(Node* n) {
    ep->retire(n, &delete_node);
    ++retired;
  }

  // --- index ---

  Bucket lookup(std::uint64_t key) {
    Bucket b;
    Level* L = reinterpret_cast<Level*>(detail::read_latest(cam(), m->root)->val);
    std::uint32_t depth = 1;
    for (;;) {
      const std::uint64_t i = L->index(key);
      const std::uint64_t w = detail::read_latest(cam(), L->slots[i].obj)->val;
      if (w & kLevelTag) {
        L = reinterpret_cast<Level*>(w & ~kLevelTag);
        ++depth;
        continue;
      }
      b.marker = reinterpret_cast<Node*>(w);
      b.level = L;
      b.index = i;
      b.depth = depth;
      return b;
    }
  }

  Node* lookup_at(std::uint64_t key, std::uint64_t t) {
    VNode* r = detail::read_at(cam(), m->root, t);
    Level* L = reinterpret_cast<Level*>(r->val);
    for (;;) {
      VNode* v = detail::read_at(cam(), L->slots[L->index(key)].obj, t);
      const std::uint64_t w = v->val;
      if (w & kLevelTag) {
        L = reinterpret_cast<Level*>(w & ~kLevelTag);
        continue;
      }
      return reinterpret_cast<Node*>(w);
    }
  }

  // --- data layer ---

  /// Harris search from marker s for the first node not before (key, marker_target),
  /// unlinking marked nodes on the way (the unlinker retires them).
  Position search(Node* s, std::uint64_t key, bool marker_target) {
  retry:
    Node* prev = s;
    std::uint32_t steps = 0;
    Node* curr = node_of(detail::read_latest(cam(), prev->next)->val);
    for (;;) {
      if (!curr) return {prev, nullptr, steps};
      const std::uint64_t cw = detail::read_latest(cam(), curr->next)->val;
      if (marked(cw)) {
        Node* succ = node_of(cw);
        if (!vcas(prev->next, reinterpret_cast<std::uint64_t>(curr), reinterpret_cast<std::uint64_t>(succ)))
          goto retry;
        retire_node(curr);
        curr = succ;
        continue;
      }
      if (!before(curr, key, marker_target)) return {prev, curr, steps};
      prev = curr;
      curr = node_of(cw);
      ++steps;
    }
  }

  /// GET's read-only walk from s: the live entry for key, or null. Passes through marked
  /// nodes without unlinking them; a REPLACED node leads to its replacement.
  Node* find(Node* s, std::uint64_t key) {
    Node* curr = node_of(detail::read_latest(cam(), s->next)->val);
    for (;;) {
      if (!curr) return nullptr;
      const std::uint64_t cw = detail::read_latest(cam(), curr->next)->val;
      if (before(curr, key, false)) {
        curr = node_of(cw);
        continue;
      }
      if (curr->boundary || curr->key != key) return nullptr;
      if (!marked(cw)) return curr;
      if (!(cw & kReplacedBit)) return nullptr;  // removed
      curr = node_of(cw);                          // its replacement, the same key
    }
  }

  /// Removes marker mk (unreferenced for long enough): marks it, then unlinks it through a
  /// search from `start`.
  void remove_marker(Node* mk, Node* start) {
    for (;;) {
      VNode* h = detail::read_latest(cam(), mk->next);
      if (marked(h->val)) break;
      if (vcas(mk->next, h->val, h->val | kDeletedBit)) break;
    }
    search(start, mk->key, true);
  }

  /// Inserts a marker for key k after start (start->key <= k) unless one exists; returns it.
  /// Called with the structure lock held (so no other marker for k is being created).
  Node* insert_or_get_marker(Node* start, std::uint64_t k) {
    if (start->key == k && start->boundary) return start;
    Node* fresh = nullptr;
    for (;;) {
      Position p = search(start, k, true);
      if (p.curr && p.curr->boundary && p.curr->key == k) {
        drop_unpublished(fresh);
        return p.curr;
      }
      if (!fresh) fresh = new_node(k, true, 0, p.curr);
      fresh->next0.val = reinterpret_cast<std::uint64_t>(p.curr);
      if (vcas(p.prev->next, reinterpret_cast<std::uint64_t>(p.curr), reinterpret_cast<std::uint64_t>(fresh)))
        return fresh;
    }
  }

  // --- structure ---
  //
  // Structure changes hold the structure lock and are called unpinned: they pin themselves,
  // renewing the pin every kRepinEvery steps, because a resize adds a marker per bucket and a
  // pin held for its whole length would hold back every thread's reclamation meanwhile. Between
  // steps they keep only pointers to levels (never freed) and to markers they reference
  // (removed only under the same lock).

  static constexpr unsigned kRepinEvery = 1024;
  struct RollingPin {
    Ctx* c;
    std::optional<mem::EpochManager::Guard> g;
    unsigned n = 0;
    explicit RollingPin(Ctx* ctx) : c(ctx) { g.emplace(c->ep->pin()); }
    void step() {
      if (++n % kRepinEvery) return;
      g.reset();
      g.emplace(c->ep->pin());
    }
  };

  void note_depth(std::uint32_t d) {
    std::uint64_t cur = m->max_depth.load(std::memory_order_relaxed);
    while (d > cur && !m->max_depth.compare_exchange_weak(cur, d)) {
    }
  }

  /// SPLIT bucket i of level L (holding the structure lock). False when the slot no longer
  /// holds a marker or the bucket is one key wide.
  bool split_locked(Level* L, std::uint64_t i, std::uint32_t fanout) {
    RollingPin pin(this);
    VNode* sv = detail::read_latest(cam(), L->slots[i].obj);
    if (sv->val & kLevelTag) return false;
    Node* ll = reinterpret_cast<Node*>(sv->val);
    const std::uint64_t lo = L->min_key(i);
    const u128 hi = i + 1 < L->n ? static_cast<u128>(L->min_key(i + 1))
                                 : static_cast<u128>(std::numeric_limits<std::uint64_t>::max()) + 1;
    // The first and last buckets are unbounded below / above: split them over one nominal
    // bucket width next to the inner buckets (the rest clamps into their edge sub-buckets).
    const std::uint64_t nominal = std::max<std::uint64_t>(1, L->w / L->n);
    std::uint64_t a = lo;
    u128 end = hi;
    if (i + 1 == L->n) end = std::min<u128>(hi, static_cast<u128>(lo) + nominal);
    if (i == 0 && L->n > 1) a = static_cast<std::uint64_t>(hi) > nominal ? static_cast<std::uint64_t>(hi) - nominal : 0;
    const u128 wide = end - a;
    if (wide < 2) return false;
    const std::uint64_t w = wide > std::numeric_limits<std::uint64_t>::max() ? std::numeric_limits<std::uint64_t>::max()
                                                                               : static_cast<std::uint64_t>(wide);
    std::uint64_t n = fanout ? fanout : w / m->cfg.split_threshold;
    n = std::clamp<std::uint64_t>(n, 2, std::max<std::uint32_t>(2, m->cfg.split_max_fanout));
    auto sub = make_level(a, w, n, L->depth + 1);
    set_slot(sub->slots[0], reinterpret_cast<std::uint64_t>(ll));
    ll->refs++;
    // Each sub-bucket's marker is searched for from the previous one (keys increase), so a
    // split walks its bucket once rather than once per sub-bucket.
    Node* from = ll;
    for (std::uint64_t j = 1; j < sub->n; ++j) {
      const std::uint64_t k = std::max(sub->min_key(j), lo);
      Node* mk = insert_or_get_marker(from, k);
      from = mk;
      mk->refs++;
      set_slot(sub->slots[j], reinterpret_cast<std::uint64_t>(mk));
      pin.step();
    }
    Level* raw = sub.get();
    m->levels.push_back(std::move(sub));
    const bool ok = vcas(L->slots[i].obj, reinterpret_cast<std::uint64_t>(ll),
                         reinterpret_cast<std::uint64_t>(raw) | kLevelTag);
    // Only structure changes write slots and they hold the lock, so the CAS cannot fail.
    if (ok) ll->refs--;
    m->splits.fetch_add(1, std::memory_order_relaxed);
    note_depth(raw->depth);
    return ok;
  }

  void unref_index(Level* L, std::vector<Node*>* freed) {
    for (std::uint64_t i = 0; i < L->n; ++i) {
      const std::uint64_t w = detail::read_latest(cam(), L->slots[i].obj)->val;
      if (w & kLevelTag) {
        unref_index(reinterpret_cast<Level*>(w & ~kLevelTag), freed);
      } else {
        Node* mk = reinterpret_cast<Node*>(w);
        if (--mk->refs == 0 && mk != m->head) freed->push_back(mk);
      }
    }
  }

  /// RESIZE (holding the structure lock): a new root of n buckets over [lo, hi].
  bool resize_locked(std::uint64_t n, std::uint64_t lo, std::uint64_t hi) {
    RollingPin pin(this);
    VNode* rv = detail::read_latest(cam(), m->root);
    Level* old = reinterpret_cast<Level*>(rv->val);
    const std::uint64_t w = hi - lo == std::numeric_limits<std::uint64_t>::max() ? hi - lo : hi - lo + 1;
    auto L = make_level(lo, w, std::clamp<std::uint64_t>(n, 1, m->cfg.max_buckets), 1);
    set_slot(L->slots[0], reinterpret_cast<std::uint64_t>(m->head));
    m->head->refs++;
    // A new bucket's marker is searched for from the old index's marker for its key or from
    // the previous new marker, whichever is nearer: with the old index coarse where the keys
    // cluster, starting from its marker alone would walk the same long run once per bucket.
    Node* prev_mk = m->head;
    for (std::uint64_t j = 1; j < L->n; ++j) {
      const std::uint64_t k = L->min_key(j);
      Node* from = lookup(k).marker;
      if (from->key < prev_mk->key) from = prev_mk;
      Node* mk = insert_or_get_marker(from, k);
      prev_mk = mk;
      mk->refs++;
      set_slot(L->slots[j], reinterpret_cast<std::uint64_t>(mk));
      pin.step();
    }
    Level* raw = L.get();
    m->levels.push_back(std::move(L));
    if (!vcas(m->root, reinterpret_cast<std::uint64_t>(old), reinterpret_cast<std::uint64_t>(raw))) return false;
    Map::Impl::Cleanup c;
    unref_index(old, &c.markers);
    c.label = detail::label_of(m->root.head.load(std::memory_order_acquire));
    c.epoch = m->epochs.epoch();
    for (Node* mk : c.markers) m->pending_markers[mk] = c.label;
    if (!c.markers.empty()) m->cleanups.push_back(std::move(c));
    m->cleanups_pending.store(m->cleanups.size(), std::memory_order_relaxed);
    m->root_level.store(raw, std::memory_order_release);
    m->resizes.fetch_add(1, std::memory_order_relaxed);
    m->max_depth.store(1, std::memory_order_relaxed);
    return true;
  }

  /// Removes markers that resizes left unreferenced, once no operation can still see the
  /// index that referenced them (holding the structure lock).
  void cleanup_locked() {
    if (m->cleanups.empty()) return;
    RollingPin pin(this);
    const std::uint64_t smin = m->compute_smin();
    const std::uint64_t epoch = m->epochs.epoch();
    auto& cl = m->cleanups;
    for (std::size_t i = 0; i < cl.size();) {
      if (smin > cl[i].label && epoch >= cl[i].epoch + 2) {
        for (Node* mk : cl[i].markers) {
          auto it = m->pending_markers.find(mk);
          if (it == m->pending_markers.end() || it->second != cl[i].label) continue;  // a later entry owns it
          m->pending_markers.erase(it);
          if (mk->refs != 0) continue;  // a later split or resize took it again
          remove_marker(mk, lookup(mk->key).marker);
          m->markers_removed.fetch_add(1, std::memory_order_relaxed);
          pin.step();
        }
        cl[i] = std::move(cl.back());
        cl.pop_back();
        m->cleanups_pending.store(cl.size(), std::memory_order_relaxed);
      } else {
        ++i;
      }
    }
  }

  /// After an insert walked `steps` nodes in bucket b: split or resize when the thresholds say so.
  void maybe_restructure(const Bucket& b, std::uint32_t steps) {
    const Config& c = m->cfg;
    if (!c.auto_structure || steps < c.split_threshold) return;
    std::unique_lock<std::mutex> lk(m->structure_m, std::try_to_lock);
    if (!lk.owns_lock()) return;  // someone else is changing the index: do not wait
    if (b.depth >= c.resize_levels) {
      flush_counts();
      grow_locked();
    } else {
      split_locked(b.level, b.index, 0);
    }
  }

  void flush_counts() {
    if (entries_delta) {
      m->entries.fetch_add(entries_delta, std::memory_order_relaxed);
      entries_delta = 0;
    }
    if (retired) {
      m->retired.fetch_add(retired, std::memory_order_relaxed);
      retired = 0;
    }
  }

  /// A resize to entries / resize_keys_per_bucket buckets over the keys seen so far (holding
  /// the structure lock).
  void grow_locked() {
    const Config& c = m->cfg;
    const std::int64_t e = m->entries.load(std::memory_order_relaxed);
    const std::uint64_t want =
        std::max<std::uint64_t>(c.buckets, e > 0 ? static_cast<std::uint64_t>(e) / c.resize_keys_per_bucket : 0);
    const std::uint64_t hi = m->max_seen.load(std::memory_order_relaxed);
    const std::uint64_t lo = std::min(m->min_seen.load(std::memory_order_relaxed), hi);
    resize_locked(want, lo, std::max(hi, lo + 1));
  }

  bool overloaded() const {
    const Config& c = m->cfg;
    if (!c.auto_structure || c.resize_load == 0) return false;
    const Level* root = m->root_level.load(std::memory_order_acquire);
    const std::int64_t e = m->entries.load(std::memory_order_relaxed);
    return e > 0 && static_cast<std::uint64_t>(e) > root->n * c.resize_load && root->n < c.max_buckets;
  }

  void maintain() {
    if (++since_maintain < kMaintainEvery) return;
    since_maintain = 0;
    flush_counts();
    if (overloaded()) {
      std::unique_lock<std::mutex> lk(m->structure_m, std::try_to_lock);
      if (lk.owns_lock() && overloaded()) grow_locked();
    }
    smin = m->compute_smin();
    if (m->cleanups_pending.load(std::memory_order_relaxed)) {
      std::unique_lock<std::mutex> lk(m->structure_m, std::try_to_lock);
      if (lk.owns_lock()) cleanup_locked();
    }
  }

  void note_key(std::uint64_t k) {
    if (k < m->min_seen.load(std::memory_order_relaxed)) {
      std::uint64_t cur = m->min_seen.load(std::memory_order_relaxed);
      while (k < cur && !m->min_seen.compare_exchange_weak(cur, k)) {
      }
    }
    if (k > m->max_seen.load(std::memory_order_relaxed)) {
      std::uint64_t cur = m->max_seen.load(std::memory_order_relaxed);
      while (k > cur && !m->max_seen.compare_exchange_weak(cur, k)) {
      }
    }
  }

  bool in_universe(std::uint64_t k) const { return k >= m->cfg.universe_min && k <= m->cfg.universe_max; }

  /// Links a new entry at position p; false when p changed meanwhile (retry, reusing fresh).
  bool link(Position& p, Node*& fresh, std::uint64_t key, std::uint64_t value) {
    if (!fresh) fresh = new_node(key, false, value, p.curr);
    fresh->next0.val = reinterpret_cast<std::uint64_t>(p.curr);
    return vcas(p.prev->next, reinterpret_cast<std::uint64_t>(p.curr), reinterpret_cast<std::uint64_t>(fresh));
  }

  /// INSERT (overwrite false) and UPSERT (overwrite true).
  Result insert(std::uint64_t key, std::uint64_t value, bool overwrite, std::uint64_t* previous, bool* existed) {
    if (!in_universe(key)) return Result::kOutOfUniverse;
    Result r = Result::kOk;
    Bucket linked_in;  // the bucket of a new entry, for the split rule
    std::uint32_t walked = 0;
    {
    auto guard = ep->pin();
    Node* fresh = nullptr;
    for (;;) {
      const Bucket b = lookup(key);
      Position p = search(b.marker, key, false);
      if (p.curr && !p.curr->boundary && p.curr->key == key) {  // present (search skips marked nodes)
        if (!overwrite) {
          r = Result::kExists;
          break;
        }
        // Replace the node: its next word becomes REPLACED -> fresh, and fresh takes its successor.
        Node* old = p.curr;
        VNode* h = detail::read_latest(cam(), old->next);
        if (marked(h->val)) continue;
        if (!fresh) fresh = new_node(key, false, value, nullptr);
        fresh->next0.val = h->val;
        auto* n = new detail::VNodeX(reinterpret_cast<std::uint64_t>(fresh) | kReplacedBit);
        if (!detail::install(cam(), old->next, h, n)) {
          delete n;
          continue;
        }
        after_install(n);
        fresh = nullptr;
        if (previous) *previous = old->value;
        if (existed) *existed = true;
        search(b.marker, key, false);  // unlinks the old node
        break;
      }
      if (link(p, fresh, key, value)) {
        fresh = nullptr;
        ++entries_delta;
        if (existed) *existed = false;
        note_key(key);
        linked_in = b;
        walked = p.steps;
        break;
      }
    }
    drop_unpublished(fresh);
    }
    // Structure changes run unpinned (they pin in steps), after the operation took effect.
    if (linked_in.marker) maybe_restructure(linked_in, walked);
    maintain();
    return r;
  }

  Result remove(std::uint64_t key, std::uint64_t* previous) {
    if (!in_universe(key)) return Result::kOutOfUniverse;
    Result r = Result::kNotFound;
    {
    auto guard = ep->pin();
    for (;;) {
      const Bucket b = lookup(key);
      Position p = search(b.marker, key, false);
      if (!p.curr || p.curr->boundary || p.curr->key != key) break;
      VNode* h = detail::read_latest(cam(), p.curr->next);
      if (marked(h->val)) continue;  // removed or replaced meanwhile: look again
      auto* n = new detail::VNodeX(h->val | kDeletedBit);
      if (!detail::install(cam(), p.curr->next, h, n)) {
        delete n;
        continue;
      }
      after_install(n);
      if (previous) *previous = p.curr->value;
      --entries_delta;
      search(b.marker, key, false);  // unlinks it
      r = Result::kOk;
      break;
    }
    }
    maintain();
    return r;
  }

  Result get(std::uint64_t key, std::uint64_t* value) {
    if (!in_universe(key)) return Result::kOutOfUniverse;
    auto guard = ep->pin();
    Node* n = find(lookup(key).marker, key);
    if (!n) return Result::kNotFound;
    if (value) *value = n->value;
    return Result::kOk;
  }

  /// Memory-level parallelism for a range walk, which is otherwise one chain of dependent
  /// misses: the root buckets that [start, end] spans are known from the index, so their
  /// chains are walked breadth-first a few nodes deep, one independent load per bucket per
  /// wave, touching the lines the walk will need. Only a hint: it reads latest versions, and
  /// the walk itself reads at its snapshot. At most kPrefetchBuckets buckets and
  /// kPrefetchDepth nodes per bucket.
  static constexpr std::uint64_t kPrefetchBuckets = 64;
  static constexpr unsigned kPrefetchDepth = 4;
  void prefetch_buckets(std::uint64_t start, std::uint64_t end) {
    const Level* L = m->root_level.load(std::memory_order_acquire);
    const std::uint64_t i0 = L->index(start), i1 = L->index(end);
    const std::uint64_t n = std::min(i1 - i0 + 1, kPrefetchBuckets);
    if (n < 2) return;
    const Node* cur[kPrefetchBuckets];
    for (std::uint64_t j = 0; j < n; ++j) {
      const std::uint64_t w = L->slots[i0 + j].obj.head.load(std::memory_order_acquire)->val;
      cur[j] = (w & kLevelTag) ? nullptr : reinterpret_cast<const Node*>(w);
      if (cur[j]) __builtin_prefetch(cur[j]);
    }
    for (unsigned d = 0; d < kPrefetchDepth; ++d) {
      for (std::uint64_t j = 0; j < n; ++j) {
        if (!cur[j]) continue;
        const Node* nx = node_of(cur[j]->next.head.load(std::memory_order_acquire)->val);
        cur[j] = nx && !nx->boundary && nx->key <= end ? nx : nullptr;  // stop at the next bucket
        if (cur[j]) __builtin_prefetch(cur[j]);
      }
    }
  }

  Status range(std::uint64_t start, std::uint64_t end, std::vector<std::pair<std::uint64_t, std::uint64_t>>* out,
               RangePage* page, std::size_t limit) {
    if (!out || !page) return Status::InvalidArgument("range: out and page must not be null");
    *page = RangePage{};
    if (start > end)
      return Status::InvalidArgument("range: start " + std::to_string(start) + " is after end " + std::to_string(end));
    if (!in_universe(start) || !in_universe(end))
      return Status::InvalidArgument("range: bounds outside the key universe [" + std::to_string(m->cfg.universe_min) +
                                     ", " + std::to_string(m->cfg.universe_max) + "]");
    const std::size_t lim = limit == 0 ? m->cfg.max_range_results : std::min(limit, m->cfg.max_range_results);
    auto guard = ep->pin();  // before the snapshot: see cleanup_locked
    auto& ann = m->announces[announce].ts;
    ann.store(kPending, std::memory_order_seq_cst);
    const std::uint64_t t = m->camera.now.load(std::memory_order_seq_cst);
    ann.store(t, std::memory_order_seq_cst);
    page->snapshot = t;
    Status st = Status::Ok();
    prefetch_buckets(start, end);
    Node* s = lookup_at(start, t);
    VNode* v = detail::read_at(cam(), s->next, t);
    Node* n = v ? node_of(v->val) : nullptr;
    while (n && n->key <= end) {
      VNode* nv = detail::read_at(cam(), n->next, t);
      if (!nv) {
        st = Status::Internal("range: a node reachable at the snapshot has no version at it");
        break;
      }
      if (!n->boundary && n->key >= start && !marked(nv->val)) {
        if (page->count == lim) {
          page->more = true;
          page->resume_key = n->key;
          break;
        }
        out->emplace_back(n->key, n->value);
        ++page->count;
      }
      n = node_of(nv->val);
    }
    ann.store(kIdle, std::memory_order_release);
    return st;
  }

  /// range() over several ranges at one snapshot, their chains walked in turn one node at a
  /// time, so that the dependent misses of one chain overlap those of the others.
  Status range_many(const std::pair<std::uint64_t, std::uint64_t>* ranges, std::size_t k,
                    std::vector<std::pair<std::uint64_t, std::uint64_t>>* outs, RangePage* pages, std::size_t limit) {
    if (k == 0) return Status::Ok();
    if (!ranges || !outs || !pages) return Status::InvalidArgument("range_many: ranges, outs and pages must not be null");
    if (k > Session::kMaxRangeCursors)
      return Status::InvalidArgument("range_many: at most " + std::to_string(Session::kMaxRangeCursors) + " ranges");
    for (std::size_t i = 0; i < k; ++i) {
      const auto [start, end] = ranges[i];
      if (start > end)
        return Status::InvalidArgument("range_many: start " + std::to_string(start) + " is after end " + std::to_string(end));
      if (!in_universe(start) || !in_universe(end))
        return Status::InvalidArgument("range_many: bounds outside the key universe [" +
                                       std::to_string(m->cfg.universe_min) + ", " + std::to_string(m->cfg.universe_max) + "]");
    }
    const std::size_t lim = limit == 0 ? m->cfg.max_range_results : std::min(limit, m->cfg.max_range_results);
    auto guard = ep->pin();  // before the snapshot: see cleanup_locked
    auto& ann = m->announces[announce].ts;
    ann.store(kPending, std::memory_order_seq_cst);
    const std::uint64_t t = m->camera.now.load(std::memory_order_seq_cst);
    ann.store(t, std::memory_order_seq_cst);
    Status st = Status::Ok();
    struct Cursor {
      Node* n;
      std::size_t i;
    };
    Cursor cs[Session::kMaxRangeCursors];
    std::size_t live = 0;
    for (std::size_t i = 0; i < k; ++i) {
      pages[i] = RangePage{};
      pages[i].snapshot = t;
      Node* s = lookup_at(ranges[i].first, t);
      VNode* v = detail::read_at(cam(), s->next, t);
      Node* n = v ? node_of(v->val) : nullptr;
      if (n && n->key <= ranges[i].second) cs[live++] = {n, i};
    }
    while (live != 0 && st.ok()) {
      // Two waves per round: the versioned links of every cursor's node (loaded by the last
      // round's prefetch) are fetched at once, then each cursor steps.
      for (std::size_t j = 0; j < live; ++j) __builtin_prefetch(cs[j].n->next.head.load(std::memory_order_relaxed));
      for (std::size_t j = 0; j < live;) {
        Cursor& c = cs[j];
        Node* n = c.n;
        const auto [start, end] = ranges[c.i];
        RangePage& page = pages[c.i];
        VNode* nv = detail::read_at(cam(), n->next, t);
        if (!nv) {
          st = Status::Internal("range: a node reachable at the snapshot has no version at it");
          break;
        }
        bool finished = false;
        if (!n->boundary && n->key >= start && !marked(nv->val)) {
          if (page.count == lim) {
            page.more = true;
            page.resume_key = n->key;
            finished = true;
          } else {
            outs[c.i].emplace_back(n->key, n->value);
            ++page.count;
          }
        }
        if (!finished) {
          Node* nx = node_of(nv->val);
          if (nx && nx->key <= end) {
            __builtin_prefetch(nx);
            c.n = nx;
            ++j;
            continue;
          }
        }
        cs[j] = cs[--live];  // this range is done; the order of the others does not matter
      }
    }
    ann.store(kIdle, std::memory_order_release);
    return st;
  }
};

// ---------------------------------------------------------------------------------------------

struct Session::Impl {
  Ctx ctx;
};

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Session::~Session() {
  Ctx& c = impl_->ctx;
  c.flush_counts();
  c.m->announces[c.announce].ts.store(kIdle, std::memory_order_release);
  c.m->announces[c.announce].used.store(false, std::memory_order_release);
}

Result Session::get(std::uint64_t key, std::uint64_t* value) { return impl_->ctx.get(key, value); }
Result Session::insert(std::uint64_t key, std::uint64_t value) {
  return impl_->ctx.insert(key, value, false, nullptr, nullptr);
}
Result Session::remove(std::uint64_t key, std::uint64_t* previous) { return impl_->ctx.remove(key, previous); }
Result Session::upsert(std::uint64_t key, std::uint64_t value, std::uint64_t* previous, bool* existed) {
  return impl_->ctx.insert(key, value, true, previous, existed);
}
Status Session::range(std::uint64_t start, std::uint64_t end, std::vector<std::pair<std::uint64_t, std::uint64_t>>* out,
                      RangePage* page, std::size_t limit) {
  return impl_->ctx.range(start, end, out, page, limit);
}
Status Session::range_many(const std::pair<std::uint64_t, std::uint64_t>* ranges, std::size_t k,
                           std::vector<std::pair<std::uint64_t, std::uint64_t>>* outs, RangePage* pages,
                           std::size_t limit) {
  return impl_->ctx.range_many(ranges, k, outs, pages, limit);
}

// ---------------------------------------------------------------------------------------------

namespace {

Status validate(const Config& c) {
  // The universe, the prediction and max_range_results follow the rule both LITs share.
  if (Status s = detail::check_common_fields(c); !s.ok()) return s;
  if (c.buckets < 1) return Status::InvalidArgument("lit: buckets must be at least 1");
  if (c.max_buckets < c.buckets) return Status::InvalidArgument("lit: max_buckets is below buckets");
  if (c.split_threshold < 2) return Status::InvalidArgument("lit: split_threshold must be at least 2");
  if (c.split_max_fanout < 2) return Status::InvalidArgument("lit: split_max_fanout must be at least 2");
  if (c.resize_levels < 2) return Status::InvalidArgument("lit: resize_levels must be at least 2");
  if (c.resize_keys_per_bucket < 1) return Status::InvalidArgument("lit: resize_keys_per_bucket must be at least 1");
  if (c.max_sessions < 1) return Status::InvalidArgument("lit: max_sessions must be at least 1");
  return Status::Ok();
}

}  // namespace

Map::Map(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Status Map::create(const Config& config, std::unique_ptr<Map>* out) {
  if (!out) return Status::InvalidArgument("lit: out must not be null");
  Status st = validate(config);
  if (!st.ok()) return st;
  auto impl = std::make_unique<Impl>();
  impl->cfg = config;
  impl->announces = std::make_unique<Impl::Announce[]>(config.max_sessions);
  // Build the root's markers single-threaded through a private context.
  Ctx c{impl.get(), impl->epochs.join()};
  impl->head = c.new_node(0, true, 0, nullptr);
  impl->head->refs = 1;
  const std::uint64_t span = config.predicted_max - config.predicted_min;
  auto L = make_level(config.predicted_min, span == std::numeric_limits<std::uint64_t>::max() ? span : span + 1,
                      config.buckets, 1);
  impl->root0.val = reinterpret_cast<std::uint64_t>(L.get());
  impl->root0.ts.store(detail::kInlineBit, std::memory_order_relaxed);
  set_slot(L->slots[0], reinterpret_cast<std::uint64_t>(impl->head));
  // A temporary one-slot root so lookup() works while markers are added in key order.
  impl->root.head.store(&impl->root0, std::memory_order_relaxed);
  Node* last = impl->head;
  for (std::uint64_t j = 1; j < L->n; ++j) set_slot(L->slots[j], reinterpret_cast<std::uint64_t>(impl->head));
  {
    auto guard = c.ep->pin();
    for (std::uint64_t j = 1; j < L->n; ++j) {
      const std::uint64_t k = L->min_key(j);
      Node* mk = c.insert_or_get_marker(last, k);
      mk->refs++;
      set_slot(L->slots[j], reinterpret_cast<std::uint64_t>(mk));
      last = mk;
    }
  }
  impl->root_level.store(L.get(), std::memory_order_release);
  impl->levels.push_back(std::move(L));
  c.flush_counts();
  c.ep.reset();
  out->reset(new Map(std::move(impl)));
  return Status::Ok();
}

Map::~Map() {
  Impl& m = *impl_;
  // Entries still linked (and their version chains); unlinked ones are freed by the epochs.
  Node* n = m.head;
  while (n) {  // their memory goes with the pool; only their later versions are freed here
    Node* next = node_of(n->next.head.load()->val);
    detail::free_chain(n->next.head.load());
    n = next;
  }
  for (auto& L : m.levels)
    for (std::uint64_t i = 0; i < L->n; ++i) detail::free_chain(L->slots[i].obj.head.load());
  detail::free_chain(m.root.head.load());
}

Status Map::open_session(std::unique_ptr<Session>* out) {
  if (!out) return Status::InvalidArgument("lit: out must not be null");
  Impl& m = *impl_;
  std::size_t slot = kIdle;
  {
    std::lock_guard<std::mutex> lk(m.sessions_m);
    for (std::size_t i = 0; i < m.cfg.max_sessions; ++i) {
      if (!m.announces[i].used.load(std::memory_order_relaxed)) {
        slot = i;
        m.announces[i].used.store(true, std::memory_order_relaxed);
        break;
      }
    }
    if (slot == kIdle)
      return Status::ResourceExhausted("lit: all " + std::to_string(m.cfg.max_sessions) + " sessions are open");
    if (slot + 1 > m.announce_high.load()) m.announce_high.store(slot + 1, std::memory_order_release);
  }
  auto impl = std::make_unique<Session::Impl>(Session::Impl{Ctx{&m, m.epochs.join()}});
  impl->ctx.announce = slot;
  impl->ctx.smin = 0;
  out->reset(new Session(std::move(impl)));
  return Status::Ok();
}

bool Map::split(std::uint64_t key, std::uint32_t fanout) {
  Impl& m = *impl_;
  Ctx c{&m, m.epochs.join()};
  bool ok = false;
  {
    std::unique_lock<std::mutex> lk(m.structure_m, std::try_to_lock);
    if (lk.owns_lock()) {
      Bucket b;
      {
        auto guard = c.ep->pin();
        b = c.lookup(key);  // levels are never freed, so b stays usable unpinned
      }
      ok = c.split_locked(b.level, b.index, fanout);
    }
  }
  c.flush_counts();
  return ok;
}

bool Map::resize(std::size_t buckets, std::uint64_t min_key, std::uint64_t max_key) {
  Impl& m = *impl_;
  if (min_key >= max_key || buckets < 1) return false;
  Ctx c{&m, m.epochs.join()};
  bool ok = false;
  {
    std::unique_lock<std::mutex> lk(m.structure_m, std::try_to_lock);
    if (lk.owns_lock()) {
      ok = c.resize_locked(buckets, min_key, max_key);
      c.smin = m.compute_smin();
      c.cleanup_locked();
    }
  }
  c.flush_counts();
  return ok;
}

Stats Map::stats() const {
  Impl& m = *impl_;
  Stats s;
  s.splits = m.splits.load();
  s.resizes = m.resizes.load();
  s.markers_removed = m.markers_removed.load();
  s.retired = m.retired.load();
  s.freed = m.epochs.freed();
  s.camera = m.camera.now.load();
  s.root_buckets = m.root_level.load(std::memory_order_acquire)->n;
  s.max_depth = m.max_depth.load();
  return s;
}

const Config& Map::config() const { return impl_->cfg; }

Status Map::check(std::uint64_t* entries) const {
  Impl& m = *impl_;
  std::uint64_t count = 0;
  const Node* prev = nullptr;
  for (const Node* n = m.head; n; n = node_of(n->next.head.load()->val)) {
    const std::uint64_t w = n->next.head.load()->val;
    if (marked(w))
      return Status::Internal("lit check: node " + std::to_string(n->key) + " is marked but still linked");
    if (prev && !(before(prev, n->key, n->boundary != 0)))
      return Status::Internal("lit check: data layer out of order at key " + std::to_string(n->key));
    if (!n->boundary) ++count;
    prev = n;
  }
  // Every slot points at a marker whose key is the least key of its bucket (or, for the first
  // bucket of a level, the least key of the parent bucket).
  struct Walk {
    static Status level(const Level* L, std::uint64_t lo) {
      for (std::uint64_t i = 0; i < L->n; ++i) {
        const std::uint64_t w = L->slots[i].obj.head.load()->val;
        const std::uint64_t expect = i == 0 ? lo : std::max(L->min_key(i), lo);
        if (w & kLevelTag) {
          Status st = level(reinterpret_cast<const Level*>(w & ~kLevelTag), expect);
          if (!st.ok()) return st;
          continue;
        }
        const Node* mk = reinterpret_cast<const Node*>(w);
        if (!mk->boundary) return Status::Internal("lit check: an index slot points at an entry");
        if (mk->key != expect)
          return Status::Internal("lit check: bucket marker " + std::to_string(mk->key) + " where " +
                                  std::to_string(expect) + " was expected (depth " + std::to_string(L->depth) + ")");
        if (marked(mk->next.head.load()->val)) return Status::Internal("lit check: an index slot points at a removed marker");
      }
      return Status::Ok();
    }
  };
  Status st = Walk::level(reinterpret_cast<const Level*>(m.root.head.load()->val), 0);
  if (!st.ok()) return st;
  if (entries) *entries = count;
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------

bool encode_bytes(std::string_view bytes, std::uint64_t* key) {
  if (!key || bytes.size() > kMaxEncodedBytes) return false;
  std::uint64_t k = 0;
  for (std::size_t i = 0; i < kMaxEncodedBytes; ++i) {
    const std::uint64_t b = i < bytes.size() ? static_cast<unsigned char>(bytes[i]) : 0;
    k |= b << (56 - 8 * i);
  }
  *key = k | bytes.size();
  return true;
}

bool decode_bytes(std::uint64_t key, std::string* bytes) {
  const std::size_t len = key & 0xff;
  if (!bytes || len > kMaxEncodedBytes) return false;
  for (std::size_t i = len; i < kMaxEncodedBytes; ++i)
    if ((key >> (56 - 8 * i)) & 0xff) return false;  // bytes after the length must be zero
  bytes->clear();
  for (std::size_t i = 0; i < len; ++i) bytes->push_back(static_cast<char>((key >> (56 - 8 * i)) & 0xff));
  return true;
}

}  // namespace duet::lit
