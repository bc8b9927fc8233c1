// Hydralist: an ordered index whose search layer is maintained asynchronously (thesis 002,
// chapter 4; docs/hydralist.md).
//
// Data layer: a doubly linked list of data nodes, each owning the keys in [anchor, next
// node's anchor) in 64 unsorted slots, with a 64-bit bitmap of used slots, one fingerprint
// byte per slot, a permuter (slot order by key) cached for scans, and an optimistic version
// lock (odd = locked). Search layer: per-replica ARTs (art.hpp) over the anchors, hints only:
// a lookup starts at the node the ART names (the jump node) and walks the list by anchor to
// the node that owns its key (the target node), so a stale search layer costs walks, never
// correctness. Splits and merges change only the data layer and append {node, insert|delete,
// timestamp} to the caller's log; a combiner thread merges the logs in timestamp order and
// hands each merged log to one updater thread per replica, the only writer of its ART.
//
// Keys: U64Keys (any u64, numeric order) or BytesKeys (byte strings up to max_key_bytes,
// bytewise order, a prefix first). Values: 8-byte words. Point operations are linearizable;
// scans give the per-key guarantee documented at Session::scan.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "duet/status.hpp"
#include "index/hydralist/art.hpp"
#include "index/hydralist/fingerprint.hpp"
#include "mem/epoch.hpp"
#include "mvrlu/clock.hpp"

namespace duet::hydralist {

/// Outcome of an operation.
enum class Result : std::uint8_t {
  kOk,        ///< done (GET, UPDATE, REMOVE: the key was present; INSERT: added)
  kNotFound,  ///< the key is absent (nothing changed)
  kExists,    ///< INSERT of a present key (nothing changed)
  kMismatch,  ///< remove_if: the key holds another value (nothing changed)
  kTooLarge,  ///< the key is over Config::max_key_bytes (nothing changed)
  kNoMemory,  ///< an allocation failed (nothing changed)
};
/// "ok", "not_found", "exists", "mismatch", "too_large", "no_memory".
const char* result_name(Result r);

/// Planted bugs for the checkers' negative controls (tests only).
enum class PlantedBug : std::uint8_t {
  kNone,
  kNotFoundWithoutValidation,  ///< GET returns not-found without re-checking the version
  kBitmapAfterUnlock,          ///< INSERT sets the slot's bitmap bit after unlocking
};

/// Index parameters. Defaults follow the thesis where it gives them.
struct Config {
  unsigned max_sessions = 256;                 ///< sessions (threads) at once; more: an error
  std::size_t max_key_bytes = 64 * 1024;       ///< BytesKeys: the store's key limit
  std::size_t max_scan = 1 << 20;              ///< most pairs one scan call returns (pages beyond)
  std::chrono::microseconds combiner_period{200};  ///< how often the combiner merges the logs
  unsigned replicas = 0;                       ///< search-layer replicas; 0: one per NUMA node
  bool async_search_layer = true;              ///< false: the splitting thread updates every replica itself
  bool backoff = true;                         ///< randomized exponential backoff under contention
  unsigned backoff_after = 4;                  ///< retries of one operation before it backs off
  unsigned backoff_max_log2 = 12;              ///< the longest wait: 2^this pause instructions
  int simd = -1;                               ///< fingerprint matcher: -1 best, else a SimdLevel
  /// Factor analysis (thesis Fig. 4.15, its first step): slots kept sorted by key in a node's
  /// first popcount(bitmap) positions, probed by binary search, no fingerprints; inserts and
  /// removes shift the slots under the lock, scans read them in place. Off: unsorted
  /// fingerprinted slots (the design).
  bool sorted_slots = false;
  bool counter_clock = false;                  ///< timestamps from a counter instead of ORDO's TSC
  bool pin_updaters = true;                    ///< pin each updater to its NUMA node (several nodes)
  PlantedBug planted_bug = PlantedBug::kNone;  ///< tests only
};

/// Counters, exact when the index is quiescent.
struct Stats {
  std::uint64_t nodes = 0;              ///< live data nodes (head included)
  std::uint64_t keys = 0;               ///< keys in live nodes
  std::uint64_t splits = 0, merges = 0;
  std::uint64_t merged_logs = 0;        ///< merged logs the combiner produced
  std::uint64_t log_entries = 0;        ///< structure changes logged
  std::uint64_t retries = 0, backoffs = 0;  ///< operation restarts, and waits
  std::uint64_t walk_steps = 0;         ///< list steps from jump node to target node
  std::size_t search_layer_bytes = 0;   ///< all replicas' ART nodes
  std::size_t data_layer_bytes = 0;     ///< data nodes and key storage
  unsigned replicas = 0;
  const char* simd = "";
};

namespace detail {

inline constexpr unsigned kSlots = 64;
inline constexpr unsigned kMergeBelow = 32;

template <class T>
inline T ld(const T& x) { return __atomic_load_n(&x, __ATOMIC_RELAXED); }
template <class T>
inline void st(T& x, T v) { __atomic_store_n(&x, v, __ATOMIC_RELAXED); }

inline void cpu_relax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}

/// A byte-string key in node storage: immutable once published.
struct Blob {
  std::uint32_t len;
  char data[1];
  std::string_view view() const { return {data, len}; }
  static Blob* make(std::string_view s) {
    void* m = ::operator new(offsetof(Blob, data) + s.size() + 1, std::nothrow);
    if (!m) return nullptr;
    Blob* b = static_cast<Blob*>(m);
    b->len = static_cast<std::uint32_t>(s.size());
    if (!s.empty()) std::memcpy(b->data, s.data(), s.size());
    return b;
  }
  static void free(void* b) { ::operator delete(b); }
};

/// Test hook: counts allocations of data nodes and key copies down; the one that finds it at
/// 0 fails (-1: off). Set it to 0 to fail the next allocation, 1 for the one after, ...
inline std::atomic<int>& fail_allocation_in() {
  static std::atomic<int> n{-1};
  return n;
}
inline bool allocation_should_fail() {
  auto& f = fail_allocation_in();
  int n = f.load(std::memory_order_relaxed);
  while (n >= 0)
    if (f.compare_exchange_weak(n, n - 1)) return n == 0;
  return false;
}

}  // namespace detail

/// 8-byte unsigned keys, numeric order; interleaved with their values in the slots.
struct U64Keys {
  using Arg = std::uint64_t;
  using Owned = std::uint64_t;
  struct Slots {
    struct KV {
      std::uint64_t key, value;
    } kv[detail::kSlots];
    Arg key(unsigned i) const { return detail::ld(kv[i].key); }
    std::uint64_t& value(unsigned i) { return kv[i].value; }
    void set_key(unsigned i, std::uint64_t k) { detail::st(kv[i].key, k); }
    std::uint64_t raw_key(unsigned i) const { return detail::ld(kv[i].key); }
  };
  using Stored = std::uint64_t;
  using Anchor = std::uint64_t;
  static bool less(Arg a, Arg b) { return a < b; }
  static std::uint8_t fp(Arg k) { return static_cast<std::uint8_t>((k * 0x9E3779B97F4A7C15ull) >> 56); }
  static Owned own(Arg k) { return k; }
  static Arg arg(const Owned& k) { return k; }
  static Arg anchor_arg(const Anchor& a) { return a; }
  static bool valid(Arg, std::size_t) { return true; }
  /// The ART key: 8 bytes, big-endian, so byte order is numeric order.
  struct ArtKey {
    char b[8];
    explicit ArtKey(Arg k) {
      for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(k >> (56 - 8 * i));
    }
    std::string_view view() const { return {b, 8}; }
  };
  static constexpr bool kBlobs = false;
};

/// Byte-string keys, bytewise order (a prefix before its extensions). Slots hold pointers to
/// immutable heap copies (Blob), values in a separate array; a removed key's copy is retired
/// through the epoch manager.
struct BytesKeys {
  using Arg = std::string_view;
  using Owned = std::string;
  /// A slot's key is a pointer to a Blob written before it is published: the store releases
  /// and the loads acquire, so a lock-free reader that follows the pointer sees the bytes (plain
  /// moves on x86; without the pair a reader may see a blob's length unwritten).
  struct Slots {
    const detail::Blob* keys[detail::kSlots];
    std::uint64_t values[detail::kSlots];
    Arg key(unsigned i) const { return raw_key(i)->view(); }
    std::uint64_t& value(unsigned i) { return values[i]; }
    void set_key(unsigned i, const detail::Blob* k) { __atomic_store_n(&keys[i], k, __ATOMIC_RELEASE); }
    const detail::Blob* raw_key(unsigned i) const { return __atomic_load_n(&keys[i], __ATOMIC_ACQUIRE); }
  };
  using Stored = const detail::Blob*;
  using Anchor = detail::Blob*;
  static bool less(Arg a, Arg b) { return a < b; }
  static std::uint8_t fp(Arg k) {
    return static_cast<std::uint8_t>(std::hash<std::string_view>{}(k) >> 56);
  }
  static Owned own(Arg k) { return std::string(k); }
  static Arg arg(const Owned& k) { return k; }
  static Arg anchor_arg(const Anchor& a) { return a->view(); }
  static bool valid(Arg k, std::size_t max) { return k.size() <= max; }
  struct ArtKey {
    std::string_view v;
    explicit ArtKey(Arg k) : v(k) {}
    std::string_view view() const { return v; }
  };
  static constexpr bool kBlobs = true;
};

template <class KT>
class Index;

namespace detail {

/// A data node. Fields read by optimistic readers are accessed atomically; everything else
/// changes only under the version lock.
template <class KT>
struct alignas(64) Node {
  alignas(64) std::uint8_t fps[kSlots];     ///< fingerprint of each slot's key
  std::atomic<std::uint64_t> version{0};    ///< even: unlocked; odd: locked
  std::atomic<bool> deleted{false};         ///< merged away (set under the lock, never cleared)
  bool is_head = false;                     ///< the first node: its anchor is minus infinity
  std::atomic<Node*> prev{nullptr};         ///< left neighbour (for a deleted node: the one it merged into)
  std::atomic<Node*> next{nullptr};
  std::uint64_t bitmap = 0;                 ///< used slots (atomic access)
  typename KT::Anchor anchor{};             ///< immutable; owned (BytesKeys)
  std::uint64_t last_scan_version = ~0ull;  ///< version at which `permuter` was built
  std::uint8_t permuter[kSlots];            ///< slots in key order (first popcount(bitmap) entries)
  typename KT::Slots slots;

  bool anchor_le(typename KT::Arg k) const { return is_head || !KT::less(k, KT::anchor_arg(anchor)); }
};

template <class KT>
void free_node(void* p) {
  auto* n = static_cast<Node<KT>*>(p);
  if constexpr (KT::kBlobs) Blob::free(n->anchor);
  n->~Node<KT>();
  ::operator delete(static_cast<void*>(n), std::align_val_t{64});
}

template <class KT>
Node<KT>* alloc_node() {
  if (allocation_should_fail()) return nullptr;
  void* m = ::operator new(sizeof(Node<KT>), std::align_val_t{64}, std::nothrow);
  if (!m) return nullptr;
  return new (m) Node<KT>();
}

template <class KT>
struct LogEntry {
  std::uint64_t ts;
  Node<KT>* node;
  bool insert;  ///< INSERT_ANCHOR (a split made `node`) or DELETE_ANCHOR (a merge removed it)
};

template <class KT>
struct MergedLog {
  std::uint64_t id;
  std::vector<LogEntry<KT>> entries;
};

/// One client thread's log (filled by its splits and merges, drained by the combiner).
template <class KT>
struct alignas(64) ThreadLog {
  std::mutex m;
  std::vector<LogEntry<KT>> entries;
  std::atomic<bool> used{false};
};

template <class KT>
struct Replica {
  Art art;
  mem::EpochManager::Participant* retirer = nullptr;  ///< who retires this ART's nodes now
  std::mutex m;                                        ///< guards queue
  std::condition_variable cv;
  std::deque<MergedLog<KT>*> queue;
  alignas(64) std::atomic<std::uint64_t> consumed{0};  ///< last merged-log id applied
  std::thread updater;
  static void retire_node(void* ctx, ArtNode* n) {
    auto* r = static_cast<Replica*>(ctx);
    if (r->retirer) r->retirer->retire(static_cast<void*>(n), &art_free_void);
    else art_free(n);
  }
  Replica() : art(&Replica::retire_node, this) {}
};

}  // namespace detail

/// Page information of a bounded scan.
struct ScanPage {
  bool more = false;  ///< the limit cut the scan: call again after the last key returned
};

/// One thread's handle: its log, its epoch participant and its backoff state. Not
/// thread-safe; destroy it on its thread, before the index.
template <class KT>
class Session {
 public:
  using Arg = typename KT::Arg;
  using Owned = typename KT::Owned;
  using Pairs = std::vector<std::pair<Owned, std::uint64_t>>;

  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// GET: kOk and *value when present, else kNotFound (validated: the key was absent at one
  /// instant during the call).
  Result get(Arg key, std::uint64_t* value);
  /// INSERT: adds key -> value when absent (kOk); kExists when present (*existing = its value
  /// when non-null), and nothing changes.
  Result insert(Arg key, std::uint64_t value, std::uint64_t* existing = nullptr);
  /// UPDATE: replaces the value of a present key in place (kOk, *previous = the old value when
  /// non-null), else kNotFound.
  Result update(Arg key, std::uint64_t value, std::uint64_t* previous = nullptr);
  /// UPSERT: sets key -> value whether or not it was present; *existed says which and, when it
  /// was, *previous holds the value it replaced (either pointer may be null). kOk.
  Result upsert(Arg key, std::uint64_t value, std::uint64_t* previous = nullptr, bool* existed = nullptr);
  /// REMOVE: deletes the key (kOk, *previous = its value when non-null), or kNotFound.
  Result remove(Arg key, std::uint64_t* previous = nullptr);
  /// Atomically: when the key is present, *value = its value and *inserted = false; else
  /// make() is called once, under the node's lock, and its result inserted (*inserted = true).
  /// make must not call into the index.
  template <class F>
  Result get_or_insert(Arg key, F&& make, std::uint64_t* value, bool* inserted);
  /// Removes the key only when it maps to `expected` (kOk); kNotFound when absent, kMismatch
  /// when it holds another value.
  Result remove_if(Arg key, std::uint64_t expected);

  /// SCAN(start, count), YCSB-E style: appends to *out up to `count` pairs with key >= start in
  /// key order. count 0 appends nothing; a count over Config::max_scan is cut to it (then
  /// page->more says whether pairs follow: continue after the last key).
  /// Guarantee (per key, not a snapshot): keys are strictly increasing; a key present during
  /// the whole call (and within what the call covered) is returned, with a value it held
  /// during the call; a key absent during the whole call is not. Different keys may be seen
  /// at different instants. A node that changes while read is re-read alone, from the last
  /// key returned.
  Result scan(Arg start, std::size_t count, Pairs* out, ScanPage* page = nullptr);
  /// SCAN(start, end, limit): the pairs with start <= key <= end, at most `limit` (0 or over
  /// Config::max_scan: max_scan), same guarantee. start > end returns nothing.
  Result scan_range(Arg start, Arg end, std::size_t limit, Pairs* out, ScanPage* page = nullptr);
  /// SCAN(start, count) without copies: calls f(key, value) for each pair, in order, with the
  /// same guarantee as scan(); a string key's view is valid only during the call. f must not
  /// call into the index. Returns what scan() would.
  template <class F>
  Result scan_view(Arg start, std::size_t count, F&& f, ScanPage* page = nullptr) {
    if (page) *page = {};
    if (!KT::valid(start, idx_->cfg_.max_key_bytes)) return Result::kTooLarge;
    if (count == 0) return Result::kOk;
    using Fn = std::remove_reference_t<F>;
    return scan_impl(start, nullptr, count,
                     [](void* c, Arg k, std::uint64_t v) { (*static_cast<Fn*>(c))(k, v); }, (void*)std::addressof(f), page);
  }

 private:
  friend class Index<KT>;
  Session(Index<KT>* idx, unsigned slot, std::unique_ptr<mem::EpochManager::Participant> p);

  using Node = detail::Node<KT>;
  Node* jump(Arg key);
  Node* target(Node* from, Arg key);
  /// A stable (even) version of n, waiting (with backoff) while it is locked.
  std::uint64_t stable(Node* n);
  bool lock(Node* n);  // try once
  bool lock_at(Node* n, std::uint64_t v);  // try once, only from version v
  void wait_retry();
  int probe(Node* n, Arg key) const;
  /// sorted_slots: the first position in [0, count) whose key is >= key, or -1 when a torn
  /// read (a null string key) shows a concurrent change; *found says whether it equals key.
  int sorted_position(Node* n, Arg key, bool* found) const;
  /// Removes slot i of n (locked): clears its bit, or (sorted_slots) shifts the slots above it
  /// down and clears the last one.
  void erase_slot(Node* n, unsigned i);
  /// sorted_slots: insert_locked's path.
  Result insert_sorted_locked(Node* n, Arg key, typename KT::Stored stored, std::uint64_t value);
  using EmitFn = void (*)(void* ctx, Arg key, std::uint64_t value);
  static void emit_pair(void* ctx, Arg key, std::uint64_t value) {
    static_cast<Pairs*>(ctx)->emplace_back(KT::own(key), value);
  }
  Result scan_impl(Arg start, const Arg* end, std::size_t limit, EmitFn emit, void* ctx, ScanPage* page);
  /// Locks the node owning `key` (valid and unlocked by others), returns it.
  Node* lock_target(Arg key);
  /// Inserts at free slot under the lock; splits when full. Returns kNoMemory on failure.
  Result insert_locked(Node* n, Arg key, typename KT::Stored stored, std::uint64_t value);
  void unlock(Node* n) { n->version.fetch_add(1, std::memory_order_release); }
  void unlock_unchanged(Node* n) { n->version.fetch_sub(1, std::memory_order_release); }
  /// The key as a node stores it: the integer itself, or a new blob holding the bytes (false
  /// when that allocation fails; the caller frees the blob if the key is not stored).
  static bool make_stored(Arg key, typename KT::Stored* out) {
    if constexpr (KT::kBlobs) {
      *out = detail::allocation_should_fail() ? nullptr : detail::Blob::make(key);
      return *out != nullptr;
    } else {
      *out = key;
      return true;
    }
  }
  void after_remove(Node* n);  // merges under n's lock when it may
  /// Moves right's entries into left (its right neighbour), unlinks right, marks it deleted and
  /// logs its removal. Both locked by the caller, who unlocks them; the two fit in one node.
  void absorb(Node* left, Node* right);
  void log(Node* n, bool insert);
  unsigned replica();

  Index<KT>* idx_;
  unsigned slot_;
  std::unique_ptr<mem::EpochManager::Participant> part_;
  std::uint64_t rng_;
  unsigned retries_ = 0;
  unsigned node_refresh_ = 0;
  unsigned replica_ = 0;
  std::uint64_t stat_retries_ = 0, stat_backoffs_ = 0, stat_walk_ = 0, stat_splits_ = 0, stat_merges_ = 0,
                stat_logged_ = 0;
};

/// The index. Create with create(); attach one Session per thread.
template <class KT>
class Index {
 public:
  using Arg = typename KT::Arg;

  /// Checks the configuration (the error names the field), starts the combiner and updaters.
  static Status create(const Config& config, std::unique_ptr<Index>* out);
  /// Stops the background threads and frees everything. Every session must be gone.
  ~Index();
  Index(const Index&) = delete;
  Index& operator=(const Index&) = delete;

  /// A session for the calling thread; ResourceExhausted when max_sessions are attached.
  Status attach(std::unique_ptr<Session<KT>>* out);

  /// Stops (true) or resumes (false) the combiner's periodic rounds; logs keep filling.
  void pause_combiner(bool paused);
  /// Applies every logged structure change to every replica and returns when they have
  /// (even while paused). Call only while no session operates (the rounds it forces take
  /// every pending entry, which is safe only then).
  void sync();
  /// Replicas of the search layer.
  unsigned replicas() const { return static_cast<unsigned>(replicas_.size()); }
  /// The fingerprint matcher in use.
  SimdLevel simd() const { return simd_; }
  /// Counters (sessions' counters are added when they detach).
  Stats stats() const;
  /// For tests, quiescent and after sync(): the list is ordered with every key inside its
  /// node's range, no live node is deleted, prev links mirror next links, and every replica
  /// indexes exactly the live nodes' anchors. *keys (may be null) receives the key count.
  Status check(std::uint64_t* keys = nullptr) const;
  /// For tests: the anchors replica r indexes, as ART keys, in order.
  std::vector<std::string> replica_anchors(unsigned r) const;
  const Config& config() const { return cfg_; }

 private:
  friend class Session<KT>;
  using Node = detail::Node<KT>;
  explicit Index(const Config& c);
  Status start();
  void combiner_loop();
  void combine_round(bool flush_all);
  void updater_loop(unsigned r);
  void apply(detail::Replica<KT>& rep, const detail::LogEntry<KT>& e);
  void detach(Session<KT>* s);

  Config cfg_;
  SimdLevel simd_;
  MatchFn match_;
  mvrlu::GlobalClock clock_;
  mem::EpochManager epoch_;
  Node* head_ = nullptr;
  std::vector<std::unique_ptr<detail::Replica<KT>>> replicas_;
  std::unique_ptr<detail::ThreadLog<KT>[]> logs_;
  bool multi_node_ = false;

  // Combiner state (combiner thread only, except under cm_).
  std::thread combiner_;
  std::mutex cm_;
  std::condition_variable ccv_;
  bool stop_ = false, paused_ = false;
  std::uint64_t sync_requested_ = 0, sync_done_ = 0;
  std::condition_variable sync_cv_;
  std::vector<detail::LogEntry<KT>> held_;
  std::deque<std::unique_ptr<detail::MergedLog<KT>>> merged_;
  std::uint64_t next_log_id_ = 0;
  std::unique_ptr<mem::EpochManager::Participant> combiner_part_;
  std::mutex sync_layer_m_;  // synchronous search layer: one writer at a time

  // Counters.
  std::atomic<std::uint64_t> merged_logs_{0}, c_retries_{0}, c_backoffs_{0}, c_walk_{0}, c_splits_{0},
      c_merges_{0}, c_logged_{0};
  std::atomic<unsigned> sessions_{0};
};

using U64Index = Index<U64Keys>;
using BytesIndex = Index<BytesKeys>;
using U64Session = Session<U64Keys>;
using BytesSession = Session<BytesKeys>;

extern template class Index<U64Keys>;
extern template class Index<BytesKeys>;
extern template class Session<U64Keys>;
extern template class Session<BytesKeys>;

// ---------------------------------------------------------------------------------------
// get_or_insert (a template member, so defined here).

template <class KT>
template <class F>
Result Session<KT>::get_or_insert(Arg key, F&& make, std::uint64_t* value, bool* inserted) {
  if (!KT::valid(key, idx_->cfg_.max_key_bytes)) return Result::kTooLarge;
  typename KT::Stored stored{};
  if (!make_stored(key, &stored)) return Result::kNoMemory;
  auto guard = part_->pin();
  Node* n = lock_target(key);
  const int s = probe(n, key);
  if (s >= 0) {
    *value = detail::ld(n->slots.value(static_cast<unsigned>(s)));
    *inserted = false;
    unlock_unchanged(n);
    if constexpr (KT::kBlobs) detail::Blob::free(const_cast<detail::Blob*>(stored));
    return Result::kOk;
  }
  const std::uint64_t v = make();
  const Result r = insert_locked(n, key, stored, v);
  if (r != Result::kOk) {
    if constexpr (KT::kBlobs) detail::Blob::free(const_cast<detail::Blob*>(stored));
    return r;
  }
  *value = v;
  *inserted = true;
  return Result::kOk;
}

}  // namespace duet::hydralist
