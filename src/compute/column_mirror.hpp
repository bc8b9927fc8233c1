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
//   Storage   chunks of kChunkRows rows (begin, end, previous version, one int64 array per
//             column), allocated as rows are appended and never moved, so a reader scans while
//             writers append. Rows are reserved by one atomic add per commit.
//   Keys      each mirrored key has a 64-bit id (Config::key_id); a striped open-addressing map
//             from id to its newest row (kept after a delete, so a key's whole history stays linked through
//             each row's `prev`) serves contains() and ends the old version.
//   Versions  never collected: every update appends a row, so memory and scan length grow with
//             the updates (a delivered order line is two rows). Limit: 2^32 rows, past which
//             the mirror stops and its readers get ResourceExhausted.
//   GPU       with Config::device_copy and a GPU present, the rows are also kept in GPU memory:
//             each GPU query first copies the rows appended since the last one, and replays a
//             log of the ends set since (old rows' ends change in place on the host), then one
//             kernel scans and aggregates. Results equal the CPU scan's bit for bit.
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
#include <utility>
#include <vector>

#include "mem/striped_counter.hpp"

#include "compute/compute.hpp"
#include "duet/status.hpp"
#include "duet/txn.hpp"

namespace duet::compute {

namespace detail::gpu {
struct MirrorCopy;
}

/// Counters of a mirror (exact when no commit is in flight).
struct MirrorStats {
  std::uint64_t rows = 0;       ///< row versions appended
  std::uint64_t keys = 0;       ///< keys with a live version
  std::uint64_t bad_rows = 0;   ///< committed values that were not rows of the codec
  std::uint64_t bytes = 0;      ///< chunk memory held
  std::uint64_t built_at = 0;   ///< the start of the load: readers need start >= it
  bool on_device = false;       ///< a GPU copy is kept
  std::uint64_t device_syncs = 0, device_rows_copied = 0, device_ends_copied = 0;
};

/// One table's versioned columns (the file comment has the design). Thread-safe: the keyspace's
/// commits append through on_commit while any number of threads call aggregate, contains and
/// stats. Made only by attach(); lives as long as its keyspace (which holds it as its observer).
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
  };

  /// Builds a mirror of `space`: installs it as the keyspace's commit observer (which keeps it
  /// alive, and updated, as long as the keyspace lives; one mirror per keyspace), loads the table from one
  /// SNAPSHOT (in pieces of `load_page` rows) and then applies the commits that came after that
  /// snapshot. InvalidArgument for an empty range, a column that is not an integer field of the
  /// codec, or no key_id; whatever SNAPSHOT or a bad loaded row returns (the observer is then
  /// removed). Cost: one pass over the table; commits meanwhile are queued, not blocked.
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
  /// picks the GPU when the mirror has a copy). At most 8 predicates and 8 aggregates. *out: column `group` (when given) then one
  /// column per aggregate, one row per group that has rows, ordered by group value; with no
  /// group, one row (count 0, sums 0, min/max 0 when nothing matched). *rows_scanned (may be
  /// null) gets the versions looked at. InvalidArgument for an unknown column, too many terms,
  /// a start before built_at or a group value outside 0 .. kMaxGroups-1; ResourceExhausted once
  /// the mirror has stopped (full) or GPU memory ran out; Unavailable when the keyspace is gone
  /// or kGpu was asked of a mirror with no GPU copy.
  Status aggregate(std::uint64_t start, const Query& q, Table* out, Device device = Device::kCpu, unsigned threads = 1,
                   std::size_t* rows_scanned = nullptr);
  /// Whether `key` has a version visible at `start` (waits for commits <= start first): the
  /// freshness check's question. InvalidArgument for a key the mirror does not hold.
  Status contains(std::string_view key, std::uint64_t start, bool* yes);

  MirrorStats stats() const;
  const std::vector<std::string>& columns() const { return cfg_.columns; }

  /// TxnCommitObserver: appends the write set's rows of the range (queued while attach() loads).
  void on_commit(std::uint64_t ts, const std::map<std::string, std::optional<std::string>, std::less<>>& writes) override;

  ~ColumnMirror() override;

 private:
  ColumnMirror() = default;
  struct Chunk;
  /// One stripe of the key map: open addressing over (id, newest row + 1) pairs, linear probing,
  /// a value of 0 marking an empty slot (entries are never removed), doubled at half full. No
  /// allocation per key: a node-based map cost every committed row a malloc and a pointer chase.
  struct Shard {
    std::mutex m;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> slots;
    std::size_t used = 0;
    /// The value slot of `id` (0 when absent); with `insert`, the slot is created (value 0) when
    /// missing. Under m.
    std::uint64_t* find(std::uint64_t id, bool insert);
  };
  static constexpr std::size_t kShards = 64;
  static constexpr std::uint64_t kNever = ~std::uint64_t{0};

  using Writes = std::map<std::string, std::optional<std::string>, std::less<>>;
  /// Appends one version per write of [from, to) below cfg_.hi (from: the first at or above
  /// cfg_.lo), ending old ones; ts > built_at_ when replayed.
  void apply(std::uint64_t ts, Writes::const_iterator from, Writes::const_iterator to);
  Shard& shard_of(std::uint64_t id) { return shards_[(id * 0x9E3779B97F4A7C15ull) >> 58]; }
  /// Appends a row version of `id` at `ts` (values null: a delete, which appends nothing) and
  /// ends its previous live version.
  void put_version(std::uint64_t id, std::uint64_t ts, const std::int64_t* values, std::uint64_t row);
  Chunk* chunk_for(std::uint64_t row);
  /// A scan's result before it becomes a table: per group, its row count and one accumulator per
  /// aggregate (group-major), the versions looked at, and whether a group value was out of range.
  struct Partial {
    std::vector<std::int64_t> rows, acc;
    std::uint64_t scanned = 0;
    bool out_of_range = false;
  };
  Status finish(const Query& q, int gcol, std::size_t groups, const Partial& r, Table* out,
                std::size_t* rows_scanned) const;
  /// Appends (row, ts) to the end log (device copy only).
  void log_end(std::uint64_t row, std::uint64_t ts);
  /// Brings the GPU copy up to every commit <= a start already waited for (under dev_m_).
  Status sync_device();
  bool decode(std::string_view value, std::int64_t* values) const;
  int column_index(std::string_view name) const;

  Config cfg_;
  std::vector<std::size_t> offsets_;  ///< byte offset in a row of each kept column
  std::weak_ptr<TxnSpace> space_;  ///< weak: the keyspace owns its observer
  std::unique_ptr<std::atomic<Chunk*>[]> chunks_;
  std::atomic<std::uint64_t> n_rows_{0};
  std::atomic<std::uint64_t> bad_rows_{0}, n_chunks_{0};
  mem::StripedCounter live_keys_;  ///< added to by every commit's new keys, on the committer's own line
  std::atomic<bool> full_{false};
  Shard shards_[kShards];

  // The GPU copy and its log of ends: entries (row, ts), ts written last (0: not yet written),
  // in chunks of kChunkRows like the rows.
  struct EndChunk {
    std::uint64_t row[kChunkRows];
    std::uint64_t ts[kChunkRows];
  };
  detail::gpu::MirrorCopy* dev_ = nullptr;
  std::unique_ptr<std::atomic<EndChunk*>[]> end_chunks_;
  std::atomic<std::uint64_t> n_ends_{0};
  mutable std::mutex dev_m_;
  std::uint64_t dev_rows_ = 0;       ///< rows below it are on the device and were complete (under dev_m_)
  std::uint64_t dev_ends_ = 0;       ///< end-log entries below it applied (under dev_m_)
  std::uint64_t dev_n_ = 0;          ///< rows on the device after the last sync (under dev_m_)
  std::uint64_t dev_syncs_ = 0, dev_rows_copied_ = 0, dev_ends_copied_ = 0;  ///< under dev_m_

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
