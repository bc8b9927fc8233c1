// A columnar copy of one table of a txn keyspace, kept by its commits and read at exactly a
// transaction's start (docs/compute.md, "Column mirror").
//
// A query that SNAPSHOTs a whole table re-gathers every row from the ordered index on every run:
// CH's Q1 over 3 M order lines copied 300 MB per query. The mirror instead appends each committed
// row version, decoded by the table's RowCodec into integer columns, as the commit happens
// (TxnCommitObserver), and stamps it with [begin, end): the commit timestamp that wrote it and
// the one that replaced or deleted it. A reader at start S takes the rows with begin <= S < end,
// once TxnSpace::wait_commits(S) has returned: so it sees exactly what a SNAPSHOT at S would,
// with no copy, and scans only the columns it reads.
//
//   Storage   a generation: chunks of kChunkRows rows (begin, end, the key's id, its previous
//             version, one int64 array per column), allocated as rows are appended and never
//             moved, so a reader scans while writers append. Rows are reserved by one atomic add
//             per commit.
//   Keys      each mirrored key has a 64-bit id (Config::key_id); a striped open-addressing map
//             from id to its newest row (kept after a delete, so a key's whole history stays
//             linked through each row's `prev`) serves contains() and ends the old version.
//   Versions  every update appends a row and ends the old one. Collection copies the rows some
//             reader may still see (end above the oldest start any transaction of the keyspace
//             reads at) into a new generation, in passes on collect_threads threads while
//             commits go on, then, with commits paused for the last rows and ends written
//             meanwhile (at most 4,096 of each), makes it current; readers keep the
//             generation they began on until they finish. A background thread collects when
//             the generation has doubled since it was made and holds at least
//             collect_min_versions ended versions, so the mirror holds at most about twice
//             what live readers can see (plus collect_min_versions), at a copy cost of
//             amortised one row per appended row. Limit: 2^32 rows per generation, past which
//             the mirror stops and its readers get ResourceExhausted.
//   GPU       with Config::device_copy and a GPU present, the rows are also kept in GPU memory:
//             each GPU query first copies the rows appended since the last one, and replays a
//             log of the ends set since (old rows' ends change in place on the host), then one
//             kernel scans and aggregates. A new generation starts a new device copy, filled by
//             its first GPU query. Results equal the CPU scan's bit for bit.
//   Bad rows  a committed value that is not a row of the codec ends the key's version (as a
//             delete would) and is counted in stats().bad_rows: a commit cannot be refused here.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "sched/striped_shared_mutex.hpp"

#include "compute/compute.hpp"
#include "duet/status.hpp"
#include "duet/txn.hpp"

namespace duet::compute {

/// Counters of a mirror (exact when no commit is in flight).
struct MirrorStats {
  std::uint64_t rows = 0;       ///< row versions in the current generation
  std::uint64_t keys = 0;       ///< keys with a live version
  std::uint64_t bad_rows = 0;   ///< committed values that were not rows of the codec
  std::uint64_t bytes = 0;      ///< chunk memory of the current generation (rows and its end log)
  std::uint64_t built_at = 0;   ///< the start of the load
  std::uint64_t min_start = 0;  ///< readers need start >= it: built_at, raised by collections
  std::uint64_t collections = 0;          ///< generations made by collection
  std::uint64_t versions_collected = 0;   ///< row versions left behind by them
  std::uint64_t longest_pause_us = 0;     ///< the longest time a collection paused commits
  std::uint64_t longest_collection_us = 0;  ///< the longest collection, start to switch
  bool on_device = false;       ///< a GPU copy is kept
  std::uint64_t device_syncs = 0, device_rows_copied = 0, device_ends_copied = 0;
};

/// One table's versioned columns (the file comment has the design). Thread-safe: the keyspace's
/// commits append through on_commit while any number of threads call aggregate, contains,
/// collect and stats. Made only by attach(); lives as long as its keyspace (which holds it as
/// its observer) or longer while others hold it.
class ColumnMirror final : public TxnCommitObserver {
 public:
  static constexpr std::size_t kChunkRows = std::size_t{1} << 16;
  static constexpr std::size_t kMaxChunks = std::size_t{1} << 16;  ///< 2^32 rows
  static constexpr std::int64_t kMaxGroups = 256;

  /// What to mirror; attach() checks it.
  struct Config {
    std::string lo, hi;            ///< the mirrored keys: [lo, hi)
    RowCodec codec;                ///< every mirrored value is a row of it
    std::vector<std::string> columns;  ///< integer fields (kInt64, kMoney) to keep, in this order
    /// A mirrored key's 64-bit id, distinct per key; false for a key in [lo, hi) that is not a
    /// row key (it is then ignored).
    std::function<bool(std::string_view key, std::uint64_t* id)> key_id;
    /// Also keep the rows in GPU memory when a GPU is present (aggregate on Device::kGpu);
    /// without one the mirror is CPU-only and says so in stats().on_device.
    bool device_copy = false;
    /// The background collector wakes this often (0: no background collection; collect() only).
    unsigned collect_interval_ms = 100;
    /// Ended versions a generation must hold before the background collector copies it.
    std::uint64_t collect_min_versions = std::uint64_t{1} << 20;
    /// Threads a collection copies on (0: a quarter of the hardware threads, 1 to 8).
    unsigned collect_threads = 0;
  };

  /// Builds a mirror of `space`: adds it to the keyspace's commit observers (which keep it
  /// alive, and updated, as long as the keyspace lives; several mirrors may observe one keyspace,
  /// up to TxnSpace::kMaxCommitObservers observers in all), loads the table from one
  /// SNAPSHOT (in pieces of `load_page` rows) and then applies the commits that came after that
  /// snapshot; starts the background collector. InvalidArgument for an empty range, a column
  /// that is not an integer field of the codec, or no key_id; whatever SNAPSHOT or a bad loaded
  /// row returns (the observer is then removed). Cost: one pass over the table; commits
  /// meanwhile are queued, not blocked.
  static Status attach(std::shared_ptr<TxnSpace> space, Config config, std::shared_ptr<ColumnMirror>* out,
                       std::size_t load_page = 65536);

  /// What aggregate() computes: the visible rows at a start that pass every predicate (integer
  /// columns; kEq .. kBetween as in Predicate), grouped by `group` (a column whose values are
  /// 0 .. kMaxGroups-1; empty: one group), each aggregate over an integer column.
  struct Query {
    std::vector<Predicate> where;
    std::string group;
    std::vector<Agg> aggs;
  };
  /// The query over the rows visible at `start` (waits for commits <= start first): on the CPU
  /// on `threads` threads (1: the calling thread only), or on the GPU copy (Device::kGpu; kAuto
  /// picks the GPU when the mirror has a copy). `start` must be the start of a transaction that
  /// is still open (or a later one): collection frees versions no open transaction can see.
  /// At most 8 predicates and 8 aggregates. *out: column `group` (when given) then one
  /// column per aggregate, one row per group that has rows, ordered by group value; with no
  /// group, one row (count 0, sums 0, min/max 0 when nothing matched). *rows_scanned (may be
  /// null) gets the versions looked at. InvalidArgument for an unknown column, too many terms,
  /// a start before built_at or a group value outside 0 .. kMaxGroups-1; ResourceExhausted
  /// ("snapshot too old") for a start below min_start, and once the mirror has stopped (full)
  /// or GPU memory ran out; Unavailable when the keyspace is gone or kGpu was asked of a mirror
  /// with no GPU copy.
  Status aggregate(std::uint64_t start, const Query& q, Table* out, Device device = Device::kCpu, unsigned threads = 1,
                   std::size_t* rows_scanned = nullptr);
  /// Whether `key` has a version visible at `start` (waits for commits <= start first): the
  /// freshness check's question. InvalidArgument for a key the mirror does not hold; starts as
  /// for aggregate().
  Status contains(std::string_view key, std::uint64_t start, bool* yes);

  /// Collects now, whatever the thresholds: copies the versions visible at or after the
  /// keyspace's oldest open start into a new generation and makes it current (file comment).
  /// Cost: a pass over the generation's rows, then over what was appended meanwhile; commits
  /// to the range pause only while the last of it (at most 4,096 rows and ends) is applied. Unavailable when the keyspace is gone;
  /// ResourceExhausted when the mirror is full or memory for the copy ran out (the current
  /// generation then stays).
  Status collect();

  MirrorStats stats() const;
  /// The start of the load: aggregate() and contains() answer only at starts at or after it.
  std::uint64_t built_at() const { return built_at_; }
  const std::vector<std::string>& columns() const { return cfg_.columns; }

  /// TxnCommitObserver: appends the write set's rows of the range (queued while attach() loads).
  void on_commit(std::uint64_t ts, const std::map<std::string, std::optional<std::string>, std::less<>>& writes) override;

  ~ColumnMirror() override;

 private:
  ColumnMirror() = default;
  struct Chunk;
  struct EndChunk;
  struct Shard;
  struct Generation;
  struct CollectorControl;
  static constexpr std::uint64_t kNever = ~std::uint64_t{0};

  using Writes = std::map<std::string, std::optional<std::string>, std::less<>>;
  /// Appends one version per write of [from, to) below cfg_.hi (from: the first at or above
  /// cfg_.lo) to `g`, ending old ones; ts > built_at_ when replayed.
  void apply(Generation& g, std::uint64_t ts, Writes::const_iterator from, Writes::const_iterator to);
  /// A scan's result before it becomes a table: per group, its row count and one accumulator per
  /// aggregate (group-major), the versions looked at, and whether a group value was out of range.
  struct Partial {
    std::vector<std::int64_t> rows, acc;
    std::uint64_t scanned = 0;
    bool out_of_range = false;
  };
  Status finish(const Query& q, int gcol, std::size_t groups, const Partial& r, Table* out,
                std::size_t* rows_scanned) const;
  /// The generation a reader at `start` scans, once every commit <= start has applied; an error
  /// for a start it cannot serve.
  Status reader_generation(std::uint64_t start, std::shared_ptr<Generation>* out);
  /// Brings g's GPU copy up to every commit <= a start already waited for (under g.dev_m).
  Status sync_device(Generation& g);
  /// One collection keeping the versions with end > floor (under collect_m_).
  Status collect_below(std::uint64_t floor);
  /// Whether the current generation is due for a background collection.
  bool collection_due() const;
  /// The background collector's loop: waits on `control` (which outlives the mirror) and holds
  /// the mirror, through `self`, only while it checks and collects; so the mirror may be
  /// destroyed on that thread, which then detaches itself.
  static void run_collector(std::weak_ptr<ColumnMirror> self, std::shared_ptr<CollectorControl> control,
                            unsigned interval_ms);
  bool decode(std::string_view value, std::int64_t* values) const;
  int column_index(std::string_view name) const;

  Config cfg_;
  std::vector<std::size_t> offsets_;  ///< byte offset in a row of each kept column
  std::weak_ptr<TxnSpace> space_;  ///< weak: the keyspace owns its observer
  std::atomic<std::uint64_t> bad_rows_{0};
  std::atomic<bool> full_{false};

  // Generations. Commits append to *cur_ holding switch_m_ shared; a collection swaps it holding
  // switch_m_ exclusively (and gen_m_), so a commit's rows all land in one generation. Readers
  // take a reference to gen_ under gen_m_ after waiting for their start's commits.
  sched::StripedSharedMutex switch_m_;
  Generation* cur_ = nullptr;  ///< read under switch_m_ (either mode)
  mutable std::mutex gen_m_;
  std::shared_ptr<Generation> gen_;  ///< under gen_m_
  std::mutex collect_m_;            ///< one collection at a time
  std::atomic<std::uint64_t> collections_{0}, versions_collected_{0}, longest_pause_us_{0}, longest_collection_us_{0};
  std::atomic<std::uint64_t> dev_syncs_{0}, dev_rows_copied_{0}, dev_ends_copied_{0};

  bool device_copy_ = false;  ///< generations keep a GPU copy
  unsigned collect_threads_ = 1;
  std::thread collector_;    ///< the background collector (not started with collect_interval_ms 0)
  std::shared_ptr<CollectorControl> control_;

  // Loading: commits after the load's snapshot are queued until the snapshot is applied.
  std::mutex load_m_;
  bool loading_ = true;  ///< under load_m_; read without it once false (loaded_)
  std::atomic<bool> loaded_{false};
  struct Pending {
    std::uint64_t ts;
    std::map<std::string, std::optional<std::string>, std::less<>> writes;
  };
  std::vector<Pending> pending_;
  std::uint64_t built_at_ = 0;
};

}  // namespace duet::compute
