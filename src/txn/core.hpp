// SnapKV's internals: versions, entries, the ordered index, transaction slots, the timestamp
// source and the collector (docs/txn.md has the protocol and its proofs).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "duet/txn.hpp"
#include "mem/striped_counter.hpp"
#include "index/lit/lit.hpp"
#include "clock/tsc.hpp"

namespace duet::sched {
class ThreadPool;
}

namespace duet::txn {

inline constexpr std::uint64_t kFreeSlot = ~std::uint64_t{0};
inline constexpr std::size_t kLine = 64;

/// One committed version of a key: immutable once published, except `older`, which the
/// collector cuts. Value bytes follow the header.
struct Version {
  std::uint64_t ts;
  std::atomic<Version*> older;
  std::uint64_t len;
  bool tombstone;
  char* data() { return reinterpret_cast<char*>(this + 1); }
  static Version* make(std::string_view value, bool tombstone);
  static void destroy(Version* v) { ::operator delete(v); }
  std::size_t bytes() const { return sizeof(Version) + len; }
};

/// A key's version list (newest first) and its commit lock. Entries are never freed while the
/// keyspace lives, so a pointer found in the index stays valid.
struct Entry {
  std::atomic<Version*> head{nullptr};
  /// 0: free; otherwise the locking transaction's slot + 1.
  std::atomic<std::uint64_t> lock{0};
  std::atomic<bool> queued{false};  ///< on the collector's queue
  /// The next entry on the same collector-queue stripe; written by the pusher before the push
  /// publishes it (release), read by the collector after it takes the stripe (acquire).
  Entry* gc_next = nullptr;
  /// Next entry whose key hashes to the same point-index key (appended once, never removed).
  std::atomic<Entry*> hash_next{nullptr};
  std::uint32_t key_len = 0;
  std::string_view key() const { return {reinterpret_cast<const char*>(this + 1), key_len}; }
  static Entry* make(std::string_view key);
  static void destroy(Entry* e);
};

/// The keys whose first 8 bytes are one prefix (a collision run), in byte order.
struct Bucket {
  /// The bucket's entry while it holds exactly one key (the common case: keys of at most 8
  /// bytes, or unique 8-byte prefixes), else null; written under m. Range reads take it
  /// without the lock: a second key of the prefix is created before any version a reader
  /// could see is committed to it, so a reader that still sees the single entry has begun
  /// before the second key existed and misses nothing. First, so that a range walk's prefetch
  /// of the bucket's address loads it (behind the mutex and the map it sat on the next line).
  std::atomic<Entry*> only{nullptr};
  std::shared_mutex m;
  std::map<std::string_view, Entry*> keys;
  Bucket* next_made = nullptr;  ///< the index's list of every bucket (Index::made_buckets_)
};

/// A transaction slot: the start it holds collection at, its liveness state and, while it
/// commits, its commit word (0: not taking a timestamp; 1: taking one; ts << 1 once taken).
struct alignas(kLine) Slot {
  std::atomic<std::uint64_t> start{kFreeSlot};
  std::atomic<std::uint32_t> state{0};  ///< 0 idle, 1 in a call, 2 doomed (snapshot too old)
  std::atomic<std::uint64_t> commit{0};
  std::uint64_t begin_ns = 0;
  /// The start of the slot's last transaction (0 before the first): what begin announces
  /// before it reads the timestamp (Core::claim).
  std::atomic<std::uint64_t> last_start{0};
  /// Obsolete versions and bytes added by this slot's commits and not yet folded into
  /// Core::obsolete / Core::bytes (written only by the slot's holder; Core::flush_pending).
  /// Batching them keeps every commit off two lines that all committers would otherwise write.
  std::atomic<std::uint64_t> pending_obsolete{0}, pending_bytes{0};
};

/// The 8-byte order-preserving prefix of a key: its first 8 bytes big-endian, zero padded.
std::uint64_t prefix_of(std::string_view key);

/// The index: an ordered LIT from 8-byte prefixes to buckets (collision runs in byte order)
/// for ranges, and a point map from a 63-bit hash of the whole key to entries (chained on hash
/// collisions) for point reads and writes, so that keys sharing long prefixes cost a point
/// operation no string comparison beyond their own. The point map is an insert-only hash
/// table whose reads take no lock (PointMap in core.cpp): it needs no order, and a lookup is a
/// short probe, where a LIT lookup walks its bucket's list at two dependent cache misses a
/// node and a locking hash table writes two lock lines per read. A pool of LIT sessions serves
/// the ordered map.
class Index {
 public:
  Status init();
  ~Index();
  /// The entry of `key`, or null.
  Entry* find(std::string_view key);
  /// out[i] = find(keys[i]) for i < n (n <= kFindMany), the lookups overlapped: every key's
  /// point-map slot is prefetched, then every entry and newest version the slots name, then the
  /// keys are compared, so n lookups cost about one lookup's dependent misses, not n.
  /// hints (when given): hints[i] as find_or_insert's *head_hint for out[i] (null when out[i]
  /// is null or chained behind another key of its hash).
  static constexpr std::size_t kFindMany = 32;
  void find_many(const std::string_view* keys, std::size_t n, Entry** out,
                 std::atomic<Version*>** hints = nullptr);
  /// The entry of `key`, created (with no version) when missing. *head_hint (when given) is
  /// set to the point map's prefetch hint for the entry's newest version, or null when the
  /// entry has none (it is chained behind another key of the same hash); a committer stores
  /// each version it installs there. The hint is never read as data.
  Entry* find_or_insert(std::string_view key, bool* created, std::atomic<Version*>** head_hint = nullptr);
  /// Calls visit(ents, n) with the entries whose keys lie in `r`, in key order, in batches of
  /// at most kWalkBatch (at most max + 1 when max != 0: a capped walk reads little more than
  /// it uses); each entry's line has been loaded (its key was compared). Stops when visit
  /// returns false. Holds no lock and no LIT session while visit runs, so visit may block.
  using Visit = std::function<bool(Entry* const* ents, std::size_t n)>;
  static constexpr std::size_t kWalkBatch = 256;
  void walk(const TxnRange& r, std::size_t max, const Visit& visit);
  /// walk over the prefixes [plo, phi] only (r's key bounds still apply).
  void walk_between(const TxnRange& r, std::uint64_t plo, std::uint64_t phi, std::size_t max, const Visit& visit);
  /// Cuts the prefixes of `r` that can hold keys into at most `parts` pieces [plo, phi], in
  /// order, even in prefix value within the least and greatest prefix with a bucket (none
  /// when r holds no such prefix). Walking the pieces in order with walk_between visits what
  /// walk(r) visits.
  void split(const TxnRange& r, std::size_t parts, std::vector<std::pair<std::uint64_t, std::uint64_t>>* out);
  /// Entries in creation order (stable positions, for cursor iteration).
  void entries_from(std::uint64_t pos, std::size_t count, std::vector<Entry*>* out, std::uint64_t* next);
  std::uint64_t entry_count() const { return n_entries_.load(std::memory_order_relaxed); }

 private:
  struct alignas(kLine) PoolSlot {
    std::mutex m;
    std::unique_ptr<lit::Session> s;  ///< on the ordered map
  };
  struct PointMap;
  class SessionRef;
  Bucket* bucket_of(std::uint64_t prefix);
  Bucket* bucket_or_insert(std::uint64_t prefix);

  Entry* find_hashed(std::string_view key, std::uint64_t h, std::atomic<Version*>** head_hint);
  /// An unlimited walk's prefixes [lo, hi]: read in segments whose pieces LIT walks at once
  /// (Session::range_many), each segment's (prefix, bucket) pairs handed to take in order
  /// until it returns false.
  void walk_wide(std::uint64_t lo, std::uint64_t hi, std::vector<std::pair<std::uint64_t, std::uint64_t>>* page,
                 const std::function<bool(const std::vector<std::pair<std::uint64_t, std::uint64_t>>&)>& take);

  std::unique_ptr<lit::Map> map_;
  std::unique_ptr<PointMap> points_;
  std::vector<std::unique_ptr<PoolSlot>> pool_;
  /// The creation log: every entry at a stable position, in creation order (TxnSpace::scan's
  /// cursor). Lock-free, since every new key of every committer appends to it: a creator
  /// claims a position with one fetch_add on n_entries_ and stores its entry there (release);
  /// the chunk holding the position is made by the first creator that needs it and published
  /// by a CAS into the directory. A position claimed but not yet stored reads null and is
  /// skipped by entries_from (its key has no committed version yet). A std::mutex here was
  /// taken for each new key by every committer, holding its bucket's lock meanwhile.
  /// Capacity: kLogChunks chunks of kLogChunk entries (2^34 keys); the directory is 32 MiB of
  /// zeroed address space whose pages are mapped as chunks are made.
  static constexpr std::uint64_t kLogChunk = std::uint64_t{1} << 12, kLogChunks = std::uint64_t{1} << 22;
  std::atomic<std::atomic<Entry*>*>* log_ = nullptr;  ///< directory of kLogChunks chunk pointers
  std::atomic<std::uint64_t> n_entries_{0};
  void log_append(Entry* e);
  /// Every bucket, on a lock-free stack through Bucket::next_made (freed at destruction).
  std::atomic<Bucket*> made_buckets_{nullptr};
  /// The least and greatest prefix with a bucket (bounds for split's pieces).
  std::atomic<std::uint64_t> min_prefix_{~std::uint64_t{0}}, max_prefix_{0};
  std::atomic<std::uint64_t> n_buckets_{0};  ///< buckets made
};

/// One step of waiting for another thread (a key's committer, a commit's install): the first
/// 64 steps pause (the other thread is usually running and done within microseconds), the next
/// 32 yield, and later ones sleep 20 µs each, so that a waiter whose holder is off the CPU
/// (preempted, or blocked in the kernel) gives its CPU up instead of spinning on sched_yield,
/// which under CFS rarely hands the CPU to the holder: a third of a 16-thread OLDA profile was
/// such yields (bench/results/compute-olda/h200-cpu-profile/).
inline void wait_relax(unsigned spins) {
  if (spins < 64) _mm_pause();
  else if (spins < 96) std::this_thread::yield();
  else std::this_thread::sleep_for(std::chrono::microseconds(20));
}

struct Core {
  explicit Core(const TxnConfig& c);
  ~Core();

  // Layout: the fields read on every transaction and rarely written come first; each field
  // written at a high rate by many threads (gts, gc_floor) sits alone in a 128-byte block (a
  // line and the one the adjacent-line prefetcher pairs with it). gts used to share a line
  // with `slots`, which every begin, commit and release loads, so each of those loads missed
  // whenever another core had just taken a timestamp (bench/results/txn-h100-recheck).
  TxnConfig cfg;
  Index index;
  std::unique_ptr<Slot[]> slots;
  std::uint64_t flush_every = 1;  ///< set from cfg: 1 when exact figures are needed
  /// One more than the highest slot ever claimed: scans of the slots (oldest_start, the
  /// pending counts) stop there, so their cost follows the threads in use, not
  /// max_transactions. Raised by claim before it reads the timestamp.
  std::atomic<unsigned> slot_hwm{0};
  alignas(128) std::atomic<std::uint64_t> gts{0};  ///< the counter clock (TxnClock::kCounter)
  // The clock (TxnConfig::clock; docs/txn.md, "Timestamp source"). With the TSC, gts is unused.
  bool tsc_clock = false;
  std::uint64_t tsc_boundary = 0;  ///< B: cfg.tsc_boundary_cycles, or measured (0 with the counter)
  /// The clock now, as a start: every commit that has returned, and every one whose timestamp
  /// was taken before this call (in the order of memory accesses), has a timestamp <= it; a
  /// commit that takes its timestamp after this call gets a greater one. Ordered after every
  /// memory access this thread made before it. Counter: one load of gts; TSC: a fenced read.
  std::uint64_t clock_now() const {
#if defined(__x86_64__)
    if (tsc_clock) return tsc() - tsc_boundary;
#endif
    return gts.load(std::memory_order_seq_cst);
  }
  /// A commit's timestamp, taken with every lock of its write set held: greater than `above`
  /// (the newest version's timestamp among its keys) and than every start read before it.
  /// Counter: an increment of gts; TSC: a fenced read.
  std::uint64_t take_commit_ts(std::uint64_t above) {
#if defined(__x86_64__)
    if (tsc_clock) return std::max(tsc(), above + 1);
#endif
    (void)above;
    return gts.fetch_add(1, std::memory_order_seq_cst) + 1;
  }
  /// Returns once a start read on any core from now on is >= t (the commit wait; nothing to do
  /// for the counter). Costs up to twice the boundary, spent while the commit's own TSC passes
  /// t. A commit calls it before it installs anything, its locks held.
  void commit_wait(std::uint64_t t) const {
#if defined(__x86_64__)
    // Only this thread's own reads need ordering here: no MFENCE per check.
    if (tsc_clock) {
      const std::uint64_t until = t + 2 * tsc_boundary + planted_lag();
      while (clock::ordered_tsc() < until) _mm_pause();
    }
#endif
    (void)t;
  }
#if defined(__x86_64__)
  /// This thread's TSC (fenced_tsc, less the planted skew of TxnFaults::tsc_skew_cycles).
  std::uint64_t tsc() const {
    const std::uint64_t t = clock::fenced_tsc();
    return t - planted_lag();
  }
  /// The planted skew of this thread's TSC (0 unless TxnFaults::tsc_skew_cycles is set).
  std::uint64_t planted_lag() const { return cfg.faults.tsc_skew_cycles == 0 ? 0 : planted_skew(); }
  std::uint64_t planted_skew() const;
#endif
  // Counters. Those every commit adds to are striped by thread (a shared line would be written
  // by every committer). `obsolete` and `bytes` are read on the commit path (collection
  // watermark, memory budget): a commit adds to its slot's pending counts and folds them into
  // these single atomics every `flush_every` obsolete versions (or 1 MiB), or at once when a
  // version budget or memory budget needs the exact figure. The collector subtracts from them
  // directly, so either may run below the true count (modulo 2^64) by what slots hold pending;
  // obsolete_total() and bytes_total() add the slots back.
  alignas(128) mem::StripedCounter present_keys, versions, commits, conflicts, read_only;
  /// Keys a commit found locked when it came to lock them (by another committer; by the
  /// collector), counted once per key and commit: TxnStats::lock_waits.
  mem::StripedCounter lock_waits, lock_waits_collector;
  mem::StripedCounter lock_wait_backoffs;  ///< their steps past the first 64 pauses (wait_relax)
  std::atomic<std::uint64_t> obsolete{0}, bytes{0};
  /// Adds obsolete versions and bytes from a commit of `slot`; true when this folded the
  /// slot's counts into the shared ones (*obs: the shared obsolete count after the fold, as a
  /// signed value, which may dip below zero while other slots hold pending counts).
  bool add_pending(unsigned slot, std::int64_t obsoleted, std::int64_t bytes_added, std::int64_t* obs);
  std::uint64_t obsolete_total() const;
  std::uint64_t bytes_total() const;
  std::atomic<std::uint64_t> too_old{0}, collections{0};
  mem::StripedCounter reclaimed;  ///< by the collector and by committers (Core::cut_below)
  /// A lower bound of every start a transaction reads at, now or later: the greatest `min`
  /// a collection has computed (any computed min is one: docs/txn.md, "Versions"). Committers
  /// read it to free a key's versions below it as they install (Txn::commit).
  alignas(128) std::atomic<std::uint64_t> gc_floor{0};
  /// Raises gc_floor to `min` (a value oldest_start computed) when it is higher.
  void raise_floor(std::uint64_t min);
  /// The lock word the collector puts in an entry while it cuts its chain: slot
  /// max_transactions, which never commits, so a reader that finds it reads on at once.
  std::uint64_t collector_lock_word() const { return std::uint64_t{cfg.max_transactions} + 1; }
  /// Under e's lock: cuts e's chain below its newest version with ts <= floor, starting the
  /// search at `from` (a version of e's chain) and giving up (null) past `max_steps` versions
  /// above the floor; returns the cut tail (to free after unlocking).
  static Version* cut_below(Version* from, std::uint64_t floor, unsigned max_steps);
  /// Frees a cut tail; *n and *b get the versions and bytes freed.
  static void free_tail(Version* t, std::uint64_t* n, std::uint64_t* b);

  /// The commit observers, in the order they were added: an immutable list, replaced whole by
  /// each add or remove and read by every writing commit after its timestamp is taken (null:
  /// none). Every list ever published and every observer ever added stay alive until the
  /// keyspace dies (under observers_m), since a commit may still be walking an older list.
  struct ObserverList {
    std::vector<TxnCommitObserver*> list;
  };
  std::atomic<const ObserverList*> observers{nullptr};
  std::mutex observers_m;
  std::vector<std::unique_ptr<ObserverList>> observer_lists;     ///< under observers_m
  std::vector<std::shared_ptr<TxnCommitObserver>> observers_kept;  ///< under observers_m
  /// TxnSpace::wait_commits.
  void wait_commits(std::uint64_t ts);

  // Collector.
  alignas(128) std::mutex gc_m;  ///< one collection at a time
  // Entries with obsolete versions, for the collector: lock-free stacks (push with a CAS, the
  // collector takes a whole stack with one exchange), striped by thread so that committers on
  // different cores push to different lines. A single mutex-guarded vector here put every
  // committer on one futex at 16 threads.
  static constexpr unsigned kQueueStripes = 16;
  struct alignas(64) QueueStripe {
    std::atomic<Entry*> head{nullptr};
  };
  QueueStripe queue[kQueueStripes];
  std::mutex wake_m;
  std::condition_variable wake;
  bool stop = false;
  std::atomic<bool> gc_requested{false};
  std::thread collector;

  Status claim(unsigned* slot, std::uint64_t* start);
  void release(unsigned slot);
  /// The version of e a reader at `start` sees (null: absent), waiting out a committer that
  /// holds a timestamp <= start and has not yet installed.
  Version* read(Entry* e, std::uint64_t start);
  /// Puts e on the collector's queue unless it is already there. Lock-free; any thread.
  void enqueue(Entry* e);
  void request_gc();
  /// One collection (up to 4 passes while it dooms transactions). `background`: the
  /// collector thread's call, which skips the walk of the queue when the oldest start has not
  /// moved since its last walk (see collect()).
  void collect(bool background = false);
  std::uint64_t last_walk_min = kFreeSlot;  ///< under gc_m
  std::uint64_t oldest_start(bool exclude_doomed);
  void run_collector();
};

}  // namespace duet::txn
