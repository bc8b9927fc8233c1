// KVCG's Hot Cache: the CPU hash map that answers hot keys (section 2.3/2.6 of the seed).
//
// Layout: a power-of-two table of buckets, each a lock word and a chain of 8-entry nodes (the
// head node inline, overflow nodes allocated on collision and kept). When the entries reach
// four per bucket, the table is rebuilt at four times the size on a thread of its own (the
// insert that crowded it returns at once; inserts meanwhile lengthen the old table's chains): a
// first pass copies every bucket while writers go on, a second, with writers held off, copies
// again only the buckets written meanwhile (their version moved), then the new table is
// published. Readers go on reading the old table, which stays valid until the epoch manager
// frees it.
// Entries map an index key to a value handle (encoding.hpp) or to a tombstone (the key is
// known absent). Each entry also says whether its handle is *dirty* (written here and not
// yet replayed into the Canonical Store); the dirty keys of the current epoch form the update
// log that a model switch replays.
//
// Ownership of value blocks: a clean entry's handle belongs to the Canonical Store (the store
// retires it when it is replaced there); a dirty entry's handle belongs to the cache until it
// is replayed. update() reports when the handle it replaced was the cache's own, so the
// caller can retire it.
//
// Costs: get() reads without locking and validates with the bucket's version (a sequence
// lock: hot keys are read by many threads, and a shared lock would make each read a write to
// one cache line); update(), populate() and evict_if() take the bucket's writer lock.
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "mem/epoch.hpp"
#include "sched/striped_shared_mutex.hpp"

namespace duet::kv {

class HotCache {
 public:
  /// What a lookup found.
  enum class Found : std::uint8_t { kMiss = 0, kValue = 1, kTombstone = 2 };

  /// Sized for about `expected_entries` entries at half load.
  explicit HotCache(std::uint64_t expected_entries);
  /// Bytes of the bucket array a cache for `expected_entries` starts with (what the
  /// constructor allocates at once; overflow nodes and grows come later).
  static std::uint64_t initial_bytes(std::uint64_t expected_entries);
  ~HotCache();
  HotCache(const HotCache&) = delete;
  HotCache& operator=(const HotCache&) = delete;

  /// Looks up ikey; on kValue, *handle is its value handle (valid while the caller's epoch pin lives).
  Found get(std::uint64_t ikey, std::uint64_t* handle) const;
  /// Starts loading the cache lines get(ikey) or update(ikey) will read (a hint; no effect on
  /// contents). Callers issue it a few requests ahead, so that the misses of a batch overlap.
  void prefetch(std::uint64_t ikey) const;

  /// Writes a resident entry: a value handle, or a tombstone when erase is true. Returns kMiss
  /// (changing nothing) when ikey is not resident. Otherwise returns the previous state, sets
  /// *prev to the previous handle and *prev_owned to whether the cache owned it (retire it),
  /// and records ikey in the update log.
  Found update(std::uint64_t ikey, bool erase, std::uint64_t handle, std::uint64_t* prev, bool* prev_owned);

  /// Inserts a clean entry loaded from the Canonical Store (present with handle, or a
  /// tombstone) unless ikey is already resident, and only while `epoch` still equals
  /// `expected` (checked under the bucket lock). Returns whether it inserted. May start a grow
  /// of the table on its own thread, which joins part's epoch manager to retire the old table;
  /// the manager must outlive the cache.
  bool populate(std::uint64_t ikey, bool present, std::uint64_t handle, const std::atomic<std::uint64_t>& epoch,
                std::uint64_t expected, mem::EpochManager::Participant* part);

  /// One update-log record: the key's current state.
  struct LogRecord {
    std::uint64_t ikey;
    bool present;
    std::uint64_t handle;
  };
  /// The current state of every key in the update log, each key once. Call only while updates
  /// are blocked. A logged key that is no longer resident or logged (which the switch
  /// protocol rules out) aborts builds with DUET_CHECKS and is dropped from the log otherwise.
  std::vector<LogRecord> log_snapshot();
  /// Marks the given logged keys clean and drops them from the log (after the Canonical Store
  /// applied their replay). Call only while updates are blocked.
  void mark_replayed(const std::vector<std::uint64_t>& keys);

  /// Keys in the update log now (a hint: updates may be running).
  std::size_t log_size() const {
    std::lock_guard<std::mutex> lk(log_mutex_);
    return log_.size();
  }
  /// The early replay, step 1 (updates may run meanwhile; the caller holds the switch lock, so
  /// no switch, replay or eviction runs): empties the update log and returns each logged key's
  /// current state, marking its entry clean and unlogged. The returned handles now belong to
  /// the Canonical Store, which the caller must hand them to: an update meanwhile finds the
  /// entry clean, does not report the handle as the cache's, and logs the key again.
  std::vector<LogRecord> take_log();
  /// The early replay, step 2, after the store ran the records of take_log(): records the store
  /// did not apply (applied[j] false) are made dirty and logged again when their entry is
  /// unchanged; when an update replaced the entry meanwhile, the record's value block left the
  /// cache, and its handle is appended to *orphans: the caller retires it when the store
  /// refused it (kRetry), and leaks it when the store failed (it may hold the block).
  void settle_unapplied(const std::vector<LogRecord>& records, const std::vector<std::uint8_t>& applied,
                        std::vector<std::uint64_t>* orphans);

  /// Removes every entry for which cold(ikey) is true; returns how many. Only clean entries
  /// may be cold (the switch protocol guarantees it; builds with DUET_CHECKS abort otherwise).
  std::uint64_t evict_if(const std::function<bool(std::uint64_t)>& cold);

  /// Resident entries (values and tombstones).
  std::uint64_t size() const { return size_.load(std::memory_order_relaxed); }
  /// Times the table grew, and buckets its grows copied again with writers held off.
  std::uint64_t grows() const { return grows_.load(std::memory_order_relaxed); }
  std::uint64_t grow_recopied_buckets() const { return grow_recopied_.load(std::memory_order_relaxed); }
  /// One grow's figures: the new bucket count, the entries after it, the first pass (writers
  /// running) and the time writers were held off (the second pass and the publication).
  struct GrowTimes {
    std::uint64_t buckets = 0, entries = 0, copy_us = 0, blocked_us = 0, recopied = 0;
  };
  GrowTimes last_grow() const;
  /// The longest time a grow held writers off.
  std::uint64_t longest_grow_blocked_us() const;
  /// Waits until no grow runs (the destructor does too).
  void wait_for_grow();
  /// Tests only: runs between a grow's two passes, on the growing thread, with writers free to
  /// run (set before the cache is shared).
  void set_grow_pause_for_tests(std::function<void()> fn) { grow_pause_for_tests_ = std::move(fn); }

 private:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t(0);
  static constexpr std::uint8_t kPresent = 1, kDirty = 2, kLogged = 4;
  // Entries are read racily by get() (validated afterwards) and written with relaxed atomic
  // stores under the writer lock.
  struct Node {
    std::uint64_t keys[8];
    std::uint64_t handles[8];
    std::uint8_t flags[8];
    Node* next = nullptr;
    Node();
  };
  struct alignas(64) Bucket {
    mutable std::atomic<std::uint32_t> lock{0};
    Node head;
  };
  /// A bucket array; replaced whole when it grows.
  struct Table {
    explicit Table(std::uint64_t buckets);
    ~Table();
    Bucket& bucket(std::uint64_t ikey) const;
    std::uint64_t mask;
    std::unique_ptr<Bucket[]> buckets;
  };
  class WriteLock;
  /// Slot of ikey in b, or false; with the lock held.
  static bool find(const Bucket& b, std::uint64_t ikey, Node** node, unsigned* slot);
  /// Inserts into a bucket known not to hold ikey (writer lock held or table private).
  static void insert(Bucket& b, std::uint64_t ikey, std::uint64_t handle, std::uint8_t flags);
  void append_log(std::uint64_t ikey);
  /// The state of logged key k into *rec, under its bucket lock; with `take`, the entry is also
  /// marked clean and unlogged. False (and, with DUET_CHECKS, an abort) for a key that is not
  /// resident or not marked logged, which the switch protocol rules out.
  bool read_logged(std::uint64_t k, bool take, LogRecord* rec);
  /// Grows the table if it is still at least as loaded as when the caller looked. Called only
  /// on the grower thread that start_grow runs (one at a time).
  void grow(mem::EpochManager::Participant* part);
  /// Starts grow() on the grower thread unless a grow is starting or running.
  void start_grow(mem::EpochManager* epochs);
  /// Empties a bucket of a table no other thread sees, freeing its overflow nodes.
  static void clear_bucket(Bucket& b);

  std::atomic<Table*> table_;
  /// Writers hold it shared (with a bucket lock); grow() holds it exclusively.
  mutable sched::StripedSharedMutex resize_;
  std::atomic<bool> growing_{false};  ///< a grower thread is starting or running
  std::mutex grower_m_;
  std::thread grower_;  ///< the last grow's thread
  std::atomic<std::uint64_t> grows_{0}, grow_recopied_{0};
  std::function<void()> grow_pause_for_tests_;
  mutable std::mutex grow_times_m_;
  GrowTimes last_grow_;
  std::uint64_t longest_grow_blocked_us_ = 0;
  std::atomic<std::uint64_t> size_{0};
  mutable std::mutex log_mutex_;
  std::vector<std::uint64_t> log_;
};

}  // namespace duet::kv
