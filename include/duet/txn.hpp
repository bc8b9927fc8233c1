// The `txn` keyspace: SnapKV (dissertation chapter 3; docs/txn.md).
//
// Ordered byte-string keys (up to 64 KiB, compared bytewise, a shorter prefix first) mapped to
// byte-string values (up to 512 MiB), read and written by snapshot-isolation transactions:
//
//   TxnSpace::begin  reads the global timestamp (the transaction's start);
//   Txn::get/scan/snapshot  read the newest committed version <= start, overlaid by the
//                           transaction's own buffered writes and deletes;
//   Txn::put/del     buffer a write;
//   Txn::commit      SnapKV's Algorithm 1: lock the write set in key order, validate first-
//                    updater-wins under each lock, take the commit timestamp once all locks
//                    are held, install the versions, unlock.
//
// Guarantees: snapshot isolation with real-time order. A transaction that begins after a
// commit returned sees it; two transactions that write a common key never both commit (the
// later commit aborts, naming the key); write skew is allowed. Read-only transactions never
// abort on conflicts (they can only be aborted as "snapshot too old" when the configured
// version budget or snapshot age is exceeded). Readers never block writers; a reader waits
// only for a committer that already holds its commit timestamp and is installing.
//
// Thread safety: TxnSpace's members may be called from any number of threads. A Txn belongs to
// one thread at a time (it may move between threads between calls).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "duet/keyspace.hpp"
#include "duet/status.hpp"

namespace duet {

namespace txn {
struct Core;
}

/// Size limits; both are checked on every call that takes a key or value.
struct TxnLimits {
  std::size_t max_key_bytes = 64 * 1024;            ///< 1 .. 64 KiB
  std::size_t max_value_bytes = 512ull << 20;       ///< 0 .. 512 MiB
};

/// Fault injection for negative controls: each switch breaks one rule of the commit or read
/// protocol so that a test can show its checker catches the violation. All off in normal use.
struct TxnFaults {
  bool skip_validation = false;      ///< commit never checks for a newer version (lost updates)
  bool read_latest = false;          ///< reads return the newest version, ignoring the start
  bool ts_before_locks = false;      ///< the commit timestamp is taken before the locks
  bool install_after_unlock = false; ///< each key is unlocked before its version is installed
  bool drop_version = false;         ///< the last key of each multi-key write set is not installed
  /// With TxnClock::kTsc: threads with an odd ordinal read a TSC this many cycles behind
  /// (cores out of step); a boundary below it must let a reader miss a returned commit.
  std::uint64_t tsc_skew_cycles = 0;
  /// Yields between the steps of a commit, widening the windows the faults above open.
  unsigned step_yields = 0;
  /// Test hook, called on the committing thread at each step of a commit: "locked" (a key
  /// locked and validated), "ts" (the commit timestamp taken), "unlocked" (a key unlocked;
  /// with install_after_unlock, before its version is installed), "installed" (a key's
  /// version installed and the key unlocked). Lets a test interleave other transactions at an
  /// exact point. Empty in normal use.
  std::function<void(std::string_view step, std::string_view key)> hook;
};

/// Where a txn keyspace's timestamps come from (docs/txn.md, "Timestamp source").
enum class TxnClock {
  /// One shared atomic counter: BEGIN reads it, each writing COMMIT increments it. Exact and
  /// portable; every committer writes one cache line, which bounds commits across cores.
  kCounter,
  /// The CPU's invariant time-stamp counter (x86-64, used by the kernel as its clocksource):
  /// BEGIN reads its core's TSC less the boundary; COMMIT reads it with its locks held (at least
  /// one above each locked key's newest version), then waits, still holding them, until its own
  /// TSC has passed the timestamp by twice the boundary (ORDO's commit wait) before installing,
  /// so a transaction that begins after the commit returned, or after any reader saw it, sees
  /// it on any core. No shared line is written. open() refuses it (InvalidArgument) where the
  /// TSC cannot be used.
  kTsc,
};

/// Parses "counter" or "tsc" (any case); InvalidArgument naming both otherwise.
Status parse_txn_clock(std::string_view text, TxnClock* out);
/// "counter" or "tsc".
const char* txn_clock_name(TxnClock c);

/// A txn keyspace's settings; TxnSpace::open checks every field.
struct TxnConfig {
  TxnLimits limits;
  /// The timestamp source.
  TxnClock clock = TxnClock::kCounter;
  /// With TxnClock::kTsc: a bound, in TSC cycles, on how far two cores' TSCs may differ; each
  /// writing commit waits up to twice it. kMeasureBoundary (the default): ORDO's boundary,
  /// measured once per process (shared with MV-RLU's clock) at the first open that needs it:
  /// for every pair of the first 64 CPUs the process may run on, the least TSC difference seen
  /// from a store on one to its load on the other, each way, whose maximum bounds every pair's
  /// skew (about 1 ms per pair; it grows with the square of the CPU count). A number: that
  /// bound, at most 2^20 (0 trusts the kernel's TSC synchronisation alone).
  static constexpr std::uint64_t kMeasureBoundary = ~std::uint64_t{0};
  std::uint64_t tsc_boundary_cycles = kMeasureBoundary;
  /// Transactions open at once (each holds a slot while it runs); begin() beyond it gets
  /// kResourceExhausted.
  unsigned max_transactions = 4096;
  /// Obsolete versions (not the newest of their key) that wake the collector.
  std::uint64_t gc_watermark = 1u << 14;
  /// Version budget: when obsolete versions stay above this after a collection, the oldest
  /// transaction holding them is aborted ("snapshot too old"). 0: no budget.
  std::uint64_t max_obsolete_versions = 0;
  /// Snapshot age limit: a transaction older than this (milliseconds since begin) that holds
  /// back collection is aborted ("snapshot too old") at the next collection. 0: no limit.
  std::uint64_t max_snapshot_age_ms = 0;
  /// Bytes of keys and values the keyspace may hold (every version counted); a commit that
  /// would exceed it aborts with kResourceExhausted. 0: no bound.
  std::uint64_t memory_budget_bytes = 0;
  /// A collector thread runs collection when the watermark is reached (false: only collect()).
  bool background_gc = true;
  /// Threads reading one large SNAPSHOT range (0: one per hardware thread, at most 16).
  unsigned snapshot_threads = 0;
  /// A range (with no limit and no own writes in it) is read on the calling thread for its
  /// first this-many keys; the rest of a longer one is read in pieces by the snapshot threads.
  std::size_t parallel_range_keys = 4096;
  TxnFaults faults;
};

/// A key range with ZRANGEBYLEX-style bounds: each end is inclusive, exclusive or unbounded.
struct TxnRange {
  std::string start, end;
  bool start_inclusive = true, end_inclusive = true;
  bool start_unbounded = false, end_unbounded = false;
  /// [start, end], both inclusive.
  static TxnRange closed(std::string s, std::string e) { return TxnRange{std::move(s), std::move(e)}; }
  /// Every key.
  static TxnRange all() { return TxnRange{{}, {}, true, true, true, true}; }
};

/// One argument of SNAPSHOT: a point (one key) or a range with an optional limit.
struct SnapshotArg {
  bool is_range = false;
  std::string key;     ///< a point's key
  TxnRange range;      ///< a range's bounds
  std::size_t limit = 0;  ///< a range's most pairs (0: no limit)
  static SnapshotArg point(std::string k) { return SnapshotArg{false, std::move(k), {}, 0}; }
  static SnapshotArg of(TxnRange r, std::size_t limit = 0) { return SnapshotArg{true, {}, std::move(r), limit}; }
};

/// Allocator for SNAPSHOT's columns: an element made without a value (resize(n)) is left
/// default-initialised, which for the columns' trivial element types means not written, so a
/// column sized before its bytes are copied in is written once, not zero-filled first.
/// resize(n, v), push_back and insert still write their values.
template <class T>
struct NoFillAllocator : std::allocator<T> {
  using value_type = T;
  template <class U>
  struct rebind {
    using other = NoFillAllocator<U>;
  };
  NoFillAllocator() noexcept = default;
  template <class U>
  NoFillAllocator(const NoFillAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    std::allocator_traits<std::allocator<T>>::construct(static_cast<std::allocator<T>&>(*this), p, std::forward<Args>(args)...);
  }
};

/// One column of a SNAPSHOT result: a std::vector whose resize(n) leaves new elements
/// unwritten (see NoFillAllocator); every element SNAPSHOT hands out has been written.
template <class T>
using SnapshotColumn = std::vector<T, NoFillAllocator<T>>;

/// SNAPSHOT's columnar result (Algorithm 2's keys, values and index). Slot i has key
/// key_bytes[key_offsets[i] .. key_offsets[i+1]) and value value_bytes[value_offsets[i] ..
/// value_offsets[i+1]); argument j filled slots arg_offsets[j] .. arg_offsets[j+1]. A point
/// fills exactly one slot, with present[i] = 0 (and an empty value) when the key is absent;
/// a range fills one slot per present key, in key order. A range cut by its limit has
/// more[j] = 1 and resume[j] = the bound to continue from (exclusive of the last key).
struct TxnSnapshot {
  SnapshotColumn<char> key_bytes, value_bytes;
  SnapshotColumn<std::uint64_t> key_offsets{0}, value_offsets{0}, arg_offsets{0};
  SnapshotColumn<std::uint8_t> present;
  std::vector<std::uint8_t> more;
  std::vector<std::string> resume;
  std::size_t size() const { return present.size(); }
  std::string_view key(std::size_t i) const {
    return {key_bytes.data() + key_offsets[i], static_cast<std::size_t>(key_offsets[i + 1] - key_offsets[i])};
  }
  std::string_view value(std::size_t i) const {
    return {value_bytes.data() + value_offsets[i], static_cast<std::size_t>(value_offsets[i + 1] - value_offsets[i])};
  }
  void clear();

  /// The fixed-width form, for keys of at most 8 bytes and values of one size: keys[i] is the
  /// key's bytes big-endian, zero padded (so integer order is key order for keys of one
  /// length), values hold size() * *value_width bytes. InvalidArgument when a key is longer or
  /// the present values differ in size (an absent point's value is zero-filled).
  Status to_fixed(std::vector<std::uint64_t>* keys, std::vector<char>* values, std::size_t* value_width) const;
};

/// SNAPSHOT packed into one buffer (pinned host memory when a GPU is present, so one copy
/// reaches the device). Layout, every section 8-byte aligned, offsets in bytes from data():
/// [n slots, m args] header (2 x u64), key_offsets (n+1 u64), value_offsets (n+1 u64),
/// arg_offsets (m+1 u64), present (n bytes), key bytes, value bytes.
class PackedSnapshot {
 public:
  PackedSnapshot() = default;
  ~PackedSnapshot();
  PackedSnapshot(const PackedSnapshot&) = delete;
  PackedSnapshot& operator=(const PackedSnapshot&) = delete;
  PackedSnapshot(PackedSnapshot&& o) noexcept;
  PackedSnapshot& operator=(PackedSnapshot&& o) noexcept;
  /// Packs `s` into *out, reusing *out's buffer when it is large enough (a pinned allocation
  /// costs more than the copy: keep one PackedSnapshot per pipeline), else allocating one
  /// (kResourceExhausted when it cannot be allocated; *out is then empty). Each byte is written
  /// once (only the alignment padding is zeroed). A snapshot of at least 4 MiB is copied by the
  /// SNAPSHOT pool's threads (made on first use, `TxnConfig::snapshot_threads` of the keyspace
  /// that made it, else min(16, hardware threads)) in pieces of 1 MiB; `threads` = 1 copies on
  /// the calling thread only (any other value: the pool).
  static Status pack(const TxnSnapshot& s, PackedSnapshot* out, unsigned threads = 0);
  const char* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  std::uint64_t slots() const;
  std::uint64_t args() const;
  std::size_t key_offsets_at() const { return 16; }
  std::size_t value_offsets_at() const { return key_offsets_at() + 8 * (slots() + 1); }
  std::size_t arg_offsets_at() const { return value_offsets_at() + 8 * (slots() + 1); }
  std::size_t present_at() const { return arg_offsets_at() + 8 * (args() + 1); }
  std::size_t key_bytes_at() const { return (present_at() + slots() + 7) & ~std::size_t{7}; }
  std::size_t value_bytes_at() const;
  /// Whether the buffer is page-locked (a GPU was present).
  bool pinned() const { return pinned_; }

 private:
  char* data_ = nullptr;
  std::size_t bytes_ = 0;     ///< the packed snapshot's size
  std::size_t capacity_ = 0;  ///< the buffer's size
  bool pinned_ = false;
};

/// How a commit ended.
enum class TxnOutcome : std::uint8_t {
  kCommitted = 0,
  kConflict,         ///< first updater wins: a version newer than the start exists (retry)
  kSnapshotTooOld,   ///< aborted to bound memory (version budget or snapshot age)
};
const char* txn_outcome_name(TxnOutcome o);

/// What commit() reports.
struct CommitResult {
  TxnOutcome outcome = TxnOutcome::kCommitted;
  std::uint64_t commit_ts = 0;   ///< committed: the commit timestamp (start ts when read-only)
  std::string conflict_key;      ///< kConflict: the key that had a newer version
};

/// One transaction. Default-constructed it is inactive; TxnSpace::begin starts it, commit or
/// abort ends it, and begin may start it again (reusing its buffers). Destroying an active
/// transaction aborts it. Every call on an inactive transaction is InvalidArgument
/// ("transaction is not active") and changes nothing.
class Txn {
 public:
  Txn() = default;
  ~Txn();
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;

  bool active() const { return active_; }
  std::uint64_t start_ts() const { return start_; }

  /// The value of `key` at the start, overlaid by this transaction's writes. *found says
  /// whether it exists (value empty when not). TooLarge for an oversized key; ResourceExhausted
  /// "snapshot too old" when the transaction was aborted to bound memory (it is then inactive).
  Status get(std::string_view key, std::string* value, bool* found);
  /// n gets at once: values[i] and found[i] for keys[i], each as get would answer it, with the
  /// index lookups of up to 32 keys overlapped (their cache misses paid together, not one key
  /// after another). On an error (a bad key: checked before anything is read) no output is
  /// meaningful.
  Status get_many(const std::string_view* keys, std::size_t n, std::string* values, bool* found);
  /// Buffers key = value. TooLarge for an oversized key or value (nothing buffered).
  Status put(std::string_view key, std::string_view value);
  /// Buffers the deletion of key (deleting an absent key is allowed and writes a tombstone).
  Status del(std::string_view key);
  /// Appends to *out the present pairs in `range` in key order, at most `limit` (0: all).
  /// When the limit cut the range, *more (may be null) is true and *resume (may be null) is
  /// the key to continue from with an exclusive start. InvalidArgument for an inverted range.
  Status scan(const TxnRange& range, std::size_t limit, std::vector<std::pair<std::string, std::string>>* out,
              bool* more = nullptr, std::string* resume = nullptr);
  /// SNAPSHOT(args) at the start into *out (cleared first): Algorithm 2, own writes merged in
  /// key order. InvalidArgument for an inverted range or a bad key (nothing is returned).
  Status snapshot(std::span<const SnapshotArg> args, TxnSnapshot* out);
  /// Makes commit also validate `key` without writing it: commit aborts with kConflict naming
  /// the key when it has a version newer than `since` (a timestamp from TxnSpace::now(), or
  /// an earlier start: Redis's WATCH). The key is locked with the write set, in key order, and
  /// unlocked after the commit timestamp is taken. Watching a key twice keeps the smaller
  /// bound; a key also written is validated against min(since, start). TooLarge for an
  /// oversized key.
  Status watch(std::string_view key, std::uint64_t since);
  /// Commits (Algorithm 1). Returns ok with r->outcome kCommitted, kConflict or
  /// kSnapshotTooOld; the transaction is inactive afterwards in every case. A non-ok Status
  /// (the transaction is then aborted) means memory ran out (kResourceExhausted) or misuse.
  Status commit(CommitResult* r);
  /// Drops the buffered writes and ends the transaction. No effect when inactive.
  void abort();

  /// Writes buffered so far (own-write overlay), in key order; nullopt marks a delete.
  const std::map<std::string, std::optional<std::string>, std::less<>>& writes() const { return writes_; }

 private:
  friend class TxnSpaceImpl;
  friend struct txn::Core;
  Status enter();
  void leave();
  void end();
  /// The keyspace's core, kept after the transaction ends (until the Txn is destroyed or
  /// begun on another keyspace), so that beginning again on the same keyspace costs no
  /// reference count update.
  std::shared_ptr<txn::Core> core_;
  bool active_ = false;
  unsigned slot_ = 0;
  std::uint64_t start_ = 0;
  std::map<std::string, std::optional<std::string>, std::less<>> writes_;
  std::map<std::string, std::uint64_t, std::less<>> watches_;  ///< key -> validation bound
};

/// Sees every write set a txn keyspace commits (TxnSpace::add_commit_observer): the hook that keeps
/// a columnar copy of some keys for analytics (compute::ColumnMirror).
class TxnCommitObserver {
 public:
  virtual ~TxnCommitObserver() = default;
  /// Called once for each committing transaction that writes, on its thread, after its commit
  /// timestamp `ts` is taken and while every key it writes is still locked, so that the calls for
  /// one key come in timestamp order. `writes` is the write set in key order, nullopt marking a
  /// delete. It must not throw, wait for other transactions or use this keyspace; its cost is
  /// added to the commit's (and to the waits of readers of its keys).
  virtual void on_commit(std::uint64_t ts,
                         const std::map<std::string, std::optional<std::string>, std::less<>>& writes) = 0;
};

/// Counters, exact when quiescent.
struct TxnStats {
  std::uint64_t commits = 0, conflicts = 0, too_old = 0, read_only = 0;
  std::uint64_t keys = 0;               ///< keys in the index (present or tombstoned)
  std::uint64_t versions = 0;           ///< versions held, all keys
  std::uint64_t obsolete_versions = 0;  ///< versions that are not the newest of their key
  std::uint64_t collections = 0;        ///< collection passes run
  std::uint64_t reclaimed = 0;          ///< versions freed by collection
  std::uint64_t bytes = 0;              ///< key and value bytes held
  std::uint64_t ts = 0;                 ///< the global timestamp
  TxnClock clock = TxnClock::kCounter;    ///< the timestamp source
  /// Keys a commit found locked as it came to lock them, once per key and commit: by another
  /// committer (lock_waits) or by the collector cutting the key's versions. The commit pauses,
  /// then yields, then sleeps, until the key is free.
  std::uint64_t lock_waits = 0, lock_waits_collector = 0;
  std::uint64_t lock_wait_backoffs = 0;  ///< steps of those waits past the first 64 pauses (yields, then 20 µs sleeps)
  std::uint64_t tsc_boundary_cycles = 0;  ///< the TSC clock's boundary in use (0 with the counter)
};

/// A txn keyspace. Create one through Store::create(name, KeyspaceKind::kTxn) (default
/// settings) or TxnSpace::open (any settings, outside a Store).
class TxnSpace : public Keyspace {
 public:
  /// Checks `config` (InvalidArgument naming the field) and creates an empty keyspace.
  static Status open(std::string name, const TxnConfig& config, std::shared_ptr<TxnSpace>* out);

  /// Starts *t (aborting it first if it is active): claims a slot and reads the global
  /// timestamp. ResourceExhausted when max_transactions are open.
  virtual Status begin(Txn* t) = 0;
  /// The global timestamp now: every commit that has returned has a timestamp <= it. A bound
  /// for Txn::watch. O(1), no lock.
  virtual std::uint64_t now() const = 0;
  /// The most commit observers a keyspace takes at once (each adds its cost to every commit).
  static constexpr std::size_t kMaxCommitObservers = 16;
  /// Adds `o` to the commit observers: every commit that takes its timestamp after this call
  /// returns calls it, after the observers added before it. A commit already past that point
  /// may still call only the ones before, and one that read the list before a removal may
  /// still call a removed one, so the keyspace keeps every observer it was given alive until it
  /// is destroyed. InvalidArgument (nothing changed) for a null `o`, one already added, or
  /// kMaxCommitObservers already there. Takes a mutex; commits never wait for it.
  virtual Status add_commit_observer(std::shared_ptr<TxnCommitObserver> o) = 0;
  /// Removes `o`: commits that take their timestamps after this returns no longer call it.
  /// NotFound when it is not an observer.
  virtual Status remove_commit_observer(const TxnCommitObserver* o) = 0;
  /// Returns once every commit with a timestamp <= ts has installed its versions and returned
  /// from the observer: a reader at start ts then finds all of them in what the observer
  /// maintains. Spins on the open transactions' commit words (each wait is at most one
  /// commit's install), O(threads in use).
  virtual void wait_commits(std::uint64_t ts) = 0;
  /// A lower bound of the start of every transaction open now or begun later: the oldest open
  /// start, or the timestamp when none is open. What a structure kept beside the keyspace (a
  /// column mirror) may collect below. O(slots in use), no lock.
  virtual std::uint64_t oldest_start() const = 0;
  /// Runs one collection pass now (also enforcing the version budget and snapshot age).
  virtual void collect() = 0;
  virtual TxnStats stats() const = 0;
  virtual const TxnConfig& config() const = 0;
};

}  // namespace duet
