// MV-RLU: multi-version read-log-update (thesis chapter 3; docs/mvrlu.md).
//
// Concurrent structures built on MV-RLU read with no locks and no validation: each critical
// section (read_lock .. read_unlock) sees the snapshot of the objects as of its start, its
// local timestamp. Writers lock an object with try_lock, which places a copy of the object's
// newest version in the writer's own log; the copies of one section become visible together
// when read_unlock stores the section's commit timestamp. Nothing waits on an object lock: a
// try_lock that meets a lock, a newer version or an ambiguous timestamp reports a conflict,
// and the section aborts and retries (Thread::run does that, with jittered backoff).
//
// Guarantee: snapshot isolation. Two sections that read overlapping objects and write
// disjoint ones can both commit (write skew); locking the objects that are only read, with
// try_lock_const, turns that into a write-write conflict, and a section all of whose writes
// and relevant reads are locked is serializable (and, with the commit wait, linearizable).
//
// Memory: each thread owns a circular log (512 KiB by default) in one mmap range shared by
// all logs, so one range check tells a copy from a master object. Old versions are written
// back and reclaimed by their owners (or, for a stalled owner, by the grace-period detector
// thread) after grace periods; freed objects go after two (docs/mvrlu.md, "GC rule").
//
// Threads: a Thread handle belongs to one OS thread at a time; several handles may live on one
// OS thread (tests interleave sections that way). Handles of one Domain share the objects.
// Objects: trivially copyable types, up to a quarter of a log.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "duet/status.hpp"

namespace duet::mvrlu {

/// Where timestamps come from (docs/mvrlu.md, "Clock").
enum class ClockMode : std::uint8_t {
  kAuto,     ///< ORDO on a machine of at least Config::ordo_min_cpus CPUs whose TSC is invariant
             ///< and whose measured boundary is sane; else kCounter
  kOrdo,     ///< ORDO on the TSC (falls back to kCounter, logged, when the TSC is unusable)
  kCounter,  ///< one global atomic counter: exact, but every commit writes one shared line
};

/// Who starts grace-period detection and collection.
enum class GcMode : std::uint8_t {
  kAuto,    ///< a gp-detector thread, woken by the watermarks of the threads
  kManual,  ///< no detector thread: the caller drives rounds (tests; Domain::begin_grace_period)
};

/// Fault injection for negative controls: each switch breaks one rule of the protocol so a
/// test can show that its checker catches the violation. All off in normal use.
struct Faults {
  bool early_stamping = false;                 ///< stamp each copy as it is chained, before the set's timestamp
  bool writeback_before_grace_period = false;  ///< write the newest copy back at once
  bool text_reclaim_rule = false;              ///< reclaim when the copy's own ts < the second-to-last gp ts
  bool skip_commit_wait = false;               ///< return from commit without waiting out the boundary
  bool tsc_unusable = false;                   ///< behave as if the TSC were not invariant
  bool skip_write_latest_check = false;        ///< try_lock ignores versions newer than local-ts
  std::uint32_t commit_step_delay_us = 0;      ///< sleep between chaining the copies of a write set
};

/// A Domain's settings; Domain::create checks every field.
struct Config {
  std::size_t log_bytes = 512 * 1024;  ///< per-thread log; a multiple of 4 KiB, at least 16 KiB
  unsigned max_threads = 64;           ///< thread slots (each reserves one log in the range)
  ClockMode clock = ClockMode::kAuto;
  /// ClockMode::kAuto takes ORDO only when the process may run on at least this many CPUs
  /// (its affinity mask); below, the global counter, which has no commit wait. Measured: the
  /// counter is faster at every mix up to 16 threads on a 16-core Xeon (docs/mvrlu.md,
  /// "Clock"); ORDO's gains are on machines of hundreds of cores. 0: ORDO whenever usable.
  unsigned ordo_min_cpus = 32;
  /// Sections enter with a plain store and grace-period detection issues membarrier(2)
  /// (docs/mvrlu.md, "Commit protocol and fences"); false, or a kernel without membarrier:
  /// every section entry is a locked increment instead.
  bool asymmetric_fences = true;
  /// ORDO boundary in TSC ticks; negative: measure at start-up (once per process, logged).
  std::int64_t ordo_boundary = -1;
  /// Test clock: when non-empty, timestamps come from a logical tick counter plus skew[slot]
  /// (slot = Thread::slot(), the lowest free slot at registration; missing entries are 0),
  /// with ordo_boundary as the boundary. The detector's reads have skew 0.
  std::vector<std::int64_t> test_skew;
  double low_watermark = 0.50;   ///< log use that asks for a GC round (capacity watermark)
  double high_watermark = 0.75;  ///< log use at which read_lock waits for collection
  /// Dereference watermark: over a window of deref_window dereferences of a thread, a share
  /// of copies (versus masters) at or above this asks for a round (write-back shortens chains).
  double deref_watermark = 0.50;
  std::uint32_t deref_window = 4096;
  GcMode gc = GcMode::kAuto;
  std::uint32_t detector_period_us = 1000;  ///< detector's idle poll period
  std::uint32_t takeover_us = 500;  ///< the detector collects a log its busy owner left this long
  std::uint32_t wait_limit_ms = 2000;  ///< bound on every wait of a writer (then ResourceExhausted)
  std::uint32_t max_retries = 1u << 20;  ///< Thread::run gives up (ResourceExhausted) after this many
  bool poison_reclaimed = false;  ///< overwrite reclaimed copies with 0xDB bytes (tests)
  // --- Baselines for the benchmarks' factor analysis (docs/mvrlu.md, "Baselines"); the
  // defaults are MV-RLU, and every combination keeps the structures linearizable.
  /// RLU: read_unlock leaves the section, waits for a grace period (every other section open
  /// then has ended), writes its copies back into their masters and only then unlocks them:
  /// at most one copy per object, and writers wait synchronously. With ClockMode::kCounter
  /// this is RLU's global clock, with kOrdo RLU-ORDO. A wait over wait_limit_ms leaves the
  /// copies chained for the collector (logged) instead of hanging.
  bool rlu_sync = false;
  /// false: owners never process their own logs; the detector thread alone collects every log
  /// after each round ("one GC thread").
  bool self_log_gc = true;
  /// false: reaching the low watermark asks for no round; rounds start only when a log passes
  /// the high watermark (its owner then waits at read_lock).
  bool capacity_trigger = true;
  /// false: the dereference watermark asks for no round.
  bool deref_trigger = true;
  Faults faults;
};

/// Counters, summed over threads when asked (each is written by one thread).
struct Stats {
  std::uint64_t commits = 0;          ///< sections that committed a non-empty write set
  std::uint64_t aborts = 0;           ///< sections aborted (explicitly or by a conflict)
  std::uint64_t conflicts = 0;        ///< try_lock calls that reported a conflict
  std::uint64_t rounds = 0;           ///< GC rounds announced
  std::uint64_t writebacks = 0;       ///< newest copies written back to their masters
  std::uint64_t reclaimed_copies = 0;
  std::uint64_t takeovers = 0;        ///< logs collected by the detector for their owner
  std::uint64_t master_bytes = 0;     ///< masters allocated and not yet deallocated (with headers)
  std::uint64_t log_bytes_used = 0;   ///< log bytes between reclaim head and tail, all threads
  std::uint64_t log_bytes_total = 0;  ///< threads with a log x log size
};

class Domain;
class Thread;

/// A version-store record (docs/mvrlu.md, "Version store"): the master object of a key of the
/// `txn` keyspace, holding an 8-byte value handle or a tombstone. Allocate it as a tombstone
/// (Thread::alloc(&r, Record{0, 1})) and install its first value at the inserting commit, so
/// older snapshots see the key absent.
struct Record {
  std::uint64_t handle;
  std::uint64_t tombstone;  ///< nonzero: the key is absent in this version
};

/// lock_for_commit's outcome.
enum class CommitLock : std::uint8_t {
  kLocked,    ///< locked; the record pointer now names this section's copy
  kConflict,  ///< a version newer than start_ts exists: first updater wins, abort
  kBusy,      ///< another section holds the lock: abort (or retry the commit)
  kError,     ///< bad call (Thread::last_error() says which) or the log is full
};

/// True when a Status reports a try_lock conflict: abort the section and retry.
bool is_conflict(const Status& s);
/// True when a Status reports that try_lock found no room in the thread's log.
bool is_log_full(const Status& s);

namespace detail {

inline constexpr std::uint64_t kInf = ~std::uint64_t{0};
inline constexpr std::size_t kLine = 64;

struct WsHdr;
struct MasterHdr;

/// A copy object's header in a log; the object's bytes follow.
struct alignas(kLine) CopyHdr {
  std::uint32_t kind;   ///< log entry kind (kEntryCopy)
  std::uint32_t bytes;  ///< entry size, header included
  std::atomic<std::uint64_t> commit_ts;  ///< kInf until stamped; then the write set's ts
  std::atomic<CopyHdr*> p_older;         ///< next older committed version
  std::atomic<std::uint64_t> newer_ts;   ///< ts of the version chained on top; kInf while none
  MasterHdr* master;
  WsHdr* ws;
  std::uint64_t older_ts;  ///< ts of p_older when chained (0 when none)
  std::uint32_t flags;     ///< kFlagConst, kFlagFree
  std::uint32_t unlinked_round;  ///< GC round that wrote it back and unlinked it (0: not)
  void* data() { return this + 1; }
};
static_assert(sizeof(CopyHdr) == kLine);

/// Bytes of a master's header, and the largest alignment a master object may ask for. Half a
/// cache line: masters are allocated line-aligned, so an object of up to 32 bytes shares its
/// header's line, and deref() of a node touches one line, as the peers' nodes do.
inline constexpr std::size_t kMasterHdrBytes = 32;

/// A master object's header; the object's bytes follow.
struct alignas(kMasterHdrBytes) MasterHdr {
  std::atomic<CopyHdr*> p_copy;     ///< newest committed copy (version chain head)
  std::atomic<CopyHdr*> p_pending;  ///< the lock: the locker's uncommitted copy
  std::uint32_t size;
  std::uint32_t magic;
  void* data() { return this + 1; }
};
static_assert(sizeof(MasterHdr) == kMasterHdrBytes);

struct ThreadRec;
struct DomainImpl;

}  // namespace detail

/// One MV-RLU instance: the log range, the clock, the thread slots and the gp-detector.
class Domain {
 public:
  /// Validates `cfg` (InvalidArgument naming the field), maps the log range
  /// (ResourceExhausted when refused), picks the clock (measuring the ORDO boundary once per
  /// process unless given) and starts the detector thread in GcMode::kAuto.
  static Status create(const Config& cfg, std::unique_ptr<Domain>* out);
  /// Stops the detector and unmaps the logs. Every Thread must be gone; masters still
  /// allocated stay the owner's to release (destroy_quiescent).
  ~Domain();
  Domain(const Domain&) = delete;
  Domain& operator=(const Domain&) = delete;

  /// A handle for the calling OS thread. ResourceExhausted when every slot is taken (a slot
  /// is reusable once its departed owner's log has been collected empty).
  Status register_thread(std::unique_ptr<Thread>* out);

  /// The clock in use (kOrdo or kCounter after kAuto's choice) and its boundary in ticks.
  ClockMode clock_mode() const;
  std::uint64_t ordo_boundary() const;
  Stats stats() const;
  const Config& config() const;

  /// Asks for a GC round (the detector runs one; kManual: no effect). Cheap when pending.
  void request_gc();

  /// Runs rounds until every log is empty: all writes back in their masters, all freed
  /// objects deallocated. Requires that no section is open (InvalidArgument otherwise; it
  /// does not wait for sections). Cost: about three rounds over every log; ResourceExhausted
  /// when the logs are not empty within wait_limit_ms.
  Status drain();

  /// Deallocates a master at once, with no grace period. Only after drain() and while no
  /// section is open, for objects no longer reachable (tearing a structure down).
  void destroy_quiescent(void* object);

  // --- kManual: the caller plays the gp-detector (deterministic tests) ---
  /// Snapshots the threads' section counters and the clock. InvalidArgument outside
  /// kManual, when a detection is already open, or while the last round is not processed by
  /// every log (the reclamation barrier).
  Status begin_grace_period();
  /// True (and announces the round with gp-ts = snapshot clock - boundary) once every section
  /// open at begin_grace_period has ended; false otherwise. Never waits.
  bool finish_grace_period();
  /// Processes the current round for every log that has not yet (the detector's takeover).
  void collect_lagging();
  std::uint64_t round() const;

  // --- Version store (transactions are not sections) ---
  /// Registers a snapshot at the clock's now: *ts is its read timestamp, and no version it
  /// can see is collected until release_snapshot(*id). ResourceExhausted when all 256 slots
  /// are held. Cost: a CAS and a clock read.
  Status register_snapshot(std::uint64_t* ts, unsigned* id);
  /// Releases a snapshot; an id not held is ignored.
  void release_snapshot(unsigned id);
  /// The clock's now (fenced), as register_snapshot takes it.
  std::uint64_t now_ts();

  detail::DomainImpl* impl() { return impl_.get(); }

 private:
  Domain();
  std::unique_ptr<detail::DomainImpl> impl_;
  friend class Thread;
};

/// A registered thread. Calls from a handle whose Domain is gone are undefined; calls on a
/// handle after unregister() return InvalidArgument ("thread is not registered").
class Thread {
 public:
  /// Unregisters; an open section aborts first (its locks are released, its copies dropped).
  ~Thread();
  Thread(const Thread&) = delete;
  Thread& operator=(const Thread&) = delete;

  /// Unregisters now (as the destructor does). Later calls return InvalidArgument.
  void unregister();

  /// Starts a section: takes local-ts. Processes a pending GC round of this log first, and
  /// when the log is above the high watermark waits (bounded by wait_limit_ms, then
  /// ResourceExhausted, logged) for collection. InvalidArgument inside a section.
  Status read_lock();
  /// Ends the section, committing its write set: chain, write-set ts (the linearization
  /// point), stamp, unlock, then wait out the ORDO boundary so that a section that starts
  /// after this returns sees the writes. InvalidArgument outside a section.
  Status read_unlock();
  /// Ends the section, dropping its write set: unlocks, rewinds the log, deallocates objects
  /// allocated in it. No effect outside a section.
  void abort();

  /// The version of `obj` this section sees: its own pending copy, else the newest committed
  /// copy with commit-ts <= local-ts, else the master. A copy pointer is returned as is. Null
  /// outside a section (last_error() says why). Cost: one header read, plus one per newer
  /// version skipped. The result may only be read; write through try_lock's copy.
  template <class T>
  T* deref(T* obj) noexcept {
    return static_cast<T*>(deref_raw(const_cast<void*>(static_cast<const void*>(obj))));
  }

  /// Locks `obj` (master or copy pointer) and replaces it with a writable copy of its newest
  /// version in this thread's log. A second try_lock of the same object in a section returns
  /// the same copy (upgrading a try_lock_const). Conflict (is_conflict) when another section
  /// holds the lock, when the newest version is newer than local-ts, or when the two are
  /// within the ORDO boundary; ResourceExhausted when the log has no room (abort: the next
  /// read_lock waits for collection). InvalidArgument outside a section or for null.
  template <class T>
  Status try_lock(T*& obj) {
    void* p = obj;
    Status s = lock_raw(&p, false);
    if (s.ok()) obj = static_cast<T*>(p);
    return s;
  }
  /// As try_lock, for an object the section reads and wants no one else to change until it
  /// commits; commit unlocks it without making a version. Prevents write skew.
  template <class T>
  Status try_lock_const(T*& obj) {
    void* p = obj;
    Status s = lock_raw(&p, true);
    if (s.ok()) obj = static_cast<T*>(p);
    return s;
  }

  /// Allocates a master object constructed from `args` (T trivially copyable and trivially
  /// destructible, aligned to at most 32 bytes). Inside a section it is deallocated again if the section aborts. Outside a
  /// section it is private until published by a section. InvalidArgument when T is larger
  /// than a quarter of a log; ResourceExhausted when memory runs out.
  template <class T, class... A>
  Status alloc(T** out, A&&... args) {
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);
    static_assert(alignof(T) <= detail::kMasterHdrBytes, "MV-RLU objects may be aligned to at most 32 bytes");
    void* p = nullptr;
    Status s = alloc_raw(sizeof(T), &p);
    if (!s.ok()) return s;
    *out = new (p) T{std::forward<A>(args)...};
    return s;
  }
  /// Frees an object this section has locked (try_lock), and that the section makes
  /// unreachable: it stays locked and is deallocated two grace periods after the commit.
  /// InvalidArgument when it is not locked by this section or outside a section.
  template <class T>
  Status free(T* obj) {
    return free_raw(const_cast<void*>(static_cast<const void*>(obj)));
  }

  /// Stores into a field of a locked copy the master of `value` (a copy or master pointer).
  template <class T>
  void assign_ptr(T** field, T* value) const noexcept {
    *field = static_cast<T*>(master_of(value));
  }
  /// Whether two pointers (copies or masters) name the same object.
  template <class T, class U>
  bool cmp_ptr(T* a, U* b) const noexcept {
    return master_of(a) == master_of(b);
  }
  /// The master behind a copy pointer; a master pointer (or null) is returned as is.
  void* master_of(const void* p) const noexcept;

  /// Runs `fn` (returning Status) as a section until it commits: a conflict (from fn or a
  /// try_lock it made) aborts, backs off with jitter and retries; another error aborts and is
  /// returned. ResourceExhausted after Config::max_retries attempts or when read_lock is.
  template <class Fn>
  Status run(Fn&& fn) {
    int full = 0;
    for (std::uint32_t attempt = 0;; ++attempt) {
      Status s = read_lock();
      if (!s.ok()) return s;
      Status r = fn();
      if (r.ok()) return read_unlock();
      abort();
      // A full log: the next read_lock waits (bounded) for collection; twice full in a row
      // means the section itself does not fit.
      if (is_log_full(r) && ++full < 3) continue;
      if (!is_conflict(r)) return r;
      Status b = backoff(attempt);
      if (!b.ok()) return b;
    }
  }

  // --- Version store ---
  /// The version of `rec` a snapshot at `ts` sees (newest with commit-ts <= ts, else the
  /// master). `ts` must belong to a registered snapshot (or to this thread's open section):
  /// versions older than every snapshot and section may be collected. Outside a section the
  /// read is protected by a counter the grace periods wait for. InvalidArgument for null or
  /// an unregistered thread.
  Status read_at(const Record* rec, std::uint64_t ts, Record* out);
  /// The same for n records under one protection.
  Status read_at(const Record* const* recs, std::size_t n, std::uint64_t ts, Record* out);
  /// Inside a section: locks `rec` for a transaction that started at `start_ts` and replaces
  /// it with this section's copy (write the new handle or tombstone there). No wait.
  CommitLock lock_for_commit(Record*& rec, std::uint64_t start_ts);
  /// Commits the section's write set; one store of its commit-ts publishes it.
  /// ts == 0: the clock's, taken after the copies are chained, with the commit wait, as
  /// read_unlock does (safe with snapshots from register_snapshot). ts != 0: the caller's
  /// (a transaction oracle's); it must exceed every version the section locked over
  /// (InvalidArgument otherwise, the section stays open), and the oracle must not hand out a
  /// snapshot >= ts before this returns (a reader could see part of the set). No commit wait.
  /// last_commit_ts() gives the ts used.
  Status commit_at(std::uint64_t ts);

  /// Processes a pending GC round of this log now (at boundaries this happens anyway).
  /// InvalidArgument inside a section.
  Status collect();

  bool in_section() const noexcept { return in_section_; }
  bool registered() const noexcept { return rec_ != nullptr; }
  std::uint64_t local_ts() const noexcept { return local_ts_; }
  /// Commit ts of the last committed write set (0 before any).
  std::uint64_t last_commit_ts() const noexcept { return last_commit_ts_; }
  unsigned slot() const noexcept { return slot_; }
  /// The error of the last call that could not return a Status (deref).
  const Status& last_error() const noexcept { return last_error_; }

 private:
  friend class Domain;
  explicit Thread(Domain* d);
  void* deref_raw(void* p) noexcept;
  std::uint64_t wait_stamp(detail::CopyHdr* v) noexcept;
  Status lock_raw(void** p, bool is_const);
  /// 0 locked, 1 held by another, 2 newer version (or ambiguous), 3 error (*err says).
  int lock_impl(void** p, bool is_const, std::uint64_t limit_ts, bool ordo_check, Status* err);
  const void* version_at(void* master, std::uint64_t ts) noexcept;
  Status alloc_raw(std::size_t bytes, void** out);
  Status free_raw(void* p);
  Status backoff(std::uint32_t attempt);
  void boundary();
  /// Config::rlu_sync, after the commit left the section: grace period, write-back, unlock.
  void rlu_writeback();
  void note_outside() noexcept;

  Domain* dom_ = nullptr;
  detail::DomainImpl* d_ = nullptr;
  detail::ThreadRec* rec_ = nullptr;
  unsigned slot_ = 0;
  std::uintptr_t log_lo_ = 0, log_span_ = 0;  // every log
  std::uintptr_t own_lo_ = 0, own_span_ = 0;  // this thread's log
  bool in_section_ = false;
  std::uint64_t local_ts_ = 0;
  std::uint64_t last_commit_ts_ = 0;
  detail::WsHdr* ws_ = nullptr;
  std::uint64_t ws_off_ = 0;
  std::uint64_t section_tail_ = 0;
  std::uint64_t deref_copy_ = 0, deref_master_ = 0;
  std::uint64_t rng_ = 0;
  std::uint64_t max_head_ts_ = 0;      // newest version locked over in this section
  std::uint64_t commit_ts_override_ = 0;
  std::vector<detail::CopyHdr*> copies_;
  std::vector<detail::MasterHdr*> allocs_;
  std::vector<std::uint64_t> rlu_snap_;  // Config::rlu_sync: section counters at commit
  Status last_error_;
};

inline void* Thread::deref_raw(void* p) noexcept {
  const auto u = reinterpret_cast<std::uintptr_t>(p);
  if (u - log_lo_ < log_span_) return p;  // already a copy
  if (!in_section_ || p == nullptr) {
    if (p != nullptr) note_outside();
    return nullptr;
  }
  auto* m = static_cast<detail::MasterHdr*>(p) - 1;
  detail::CopyHdr* pend = m->p_pending.load(std::memory_order_acquire);
  if (pend != nullptr && reinterpret_cast<std::uintptr_t>(pend) - own_lo_ < own_span_ && pend->ws == ws_ &&
      pend->master == m)
    return pend->data();
  for (detail::CopyHdr* v = m->p_copy.load(std::memory_order_acquire); v != nullptr;
       v = v->p_older.load(std::memory_order_acquire)) {
    std::uint64_t ts = v->commit_ts.load(std::memory_order_acquire);
    if (ts == detail::kInf) ts = wait_stamp(v);
    if (ts <= local_ts_) {
      ++deref_copy_;
      return v->data();
    }
  }
  ++deref_master_;
  return p;
}

}  // namespace duet::mvrlu
