// The batched LIT (dissertation 6.4): one contract, two backends that run the same algorithm.
//
// An ordered map of 8-byte keys to 8-byte values that takes work in batches of point requests
// (GET, INSERT, REMOVE, UPSERT) and range queries, with linearizable range results. The
// algorithm is written once, in batch_core.hpp, against CODS groups: the GPU map (gpu_lit.cu)
// runs it on warps, the CPU twin (cpu_batch_map.cpp) on CPU threads. Both sit behind BatchMap,
// made by make_gpu_batch_map and make_cpu_batch_map, and give the same outcome for every
// request of every batch sequence (the GPU twin tests check this).
//
// Semantics per request are those of the lock-free CPU LIT (lit.hpp): GET, INSERT (fails when
// present), REMOVE, UPSERT (returns the value it replaced) and RANGE over [start, end]
// inclusive, on keys in [universe_min, universe_max]. Per batch:
//  * every request is linearizable, and the requests of one batch run concurrently, so two
//    requests on the same key in one batch take effect in some serial order;
//  * every range query reads the snapshot of the map taken when the batch starts, after every
//    earlier batch and before any update of its own batch (it linearizes at the batch's
//    start): its result equals the map's contents in [start, end] at that instant;
//  * point operations see the updates of earlier batches, and of their own batch in the order
//    the map applied them.
// Both backends choose that order the same way, so a batch's outcomes are deterministic: the
// updates of one key take effect in batch order, and every GET reads the state after all of
// the batch's updates. The twin tests rely on this; callers need not.
//
// Bad input never gives a wrong answer: a key outside the universe, an unknown op code, an
// INSERT/UPSERT without a values array, and a range with start > end or a bound outside the
// universe each get BatchStatus::kInvalid for that request alone (nothing changes). A missing
// required array fails the whole call with InvalidArgument and runs nothing.
//
// Calls on one map are thread-safe and serialised.
//
// What the batched LIT omits relative to the lock-free LIT and the seed: the index has one
// level whose buckets are fixed at creation (no SPLIT into deeper levels and no RESIZE), so
// keys outside [predicted_min, predicted_max] all gather in the first or last bucket, whose
// chain of nodes then grows and slows the operations that touch it (they stay correct).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "cods/hd.hpp"
#include "duet/status.hpp"

namespace duet::lit {

/// Parameters of a batched LIT. Checked by check_config (the error names the first bad field),
/// which every factory calls first, on every machine.
struct BatchConfig {
  /// Keys outside [universe_min, universe_max] are refused per request with kInvalid.
  std::uint64_t universe_min = 0;
  std::uint64_t universe_max = ~std::uint64_t{0};
  /// The range the root level spreads over its buckets (must lie inside the universe, and may
  /// be one key; keys outside go to the first or last bucket).
  std::uint64_t predicted_min = 0;
  std::uint64_t predicted_max = (std::uint64_t{1} << 20) - 1;
  /// Keys per root bucket: the root has floor((predicted_max - predicted_min) / bucket_width)
  /// + 1 buckets. 10 is the seed's GPU sizing (root = 1/10 of the key range), which keeps a
  /// bucket within one 32-pair node. At most 2^31 buckets.
  std::uint64_t bucket_width = 10;
  /// Nodes in the pool (640 bytes each). 0: buckets + buckets / 2 + 2^20. A batch whose updates
  /// need more nodes than are free reports kRetry for those requests. At most 2^32 - 2.
  std::uint64_t node_capacity = 0;
  /// Most entries one range query returns (and the cap for a larger per-batch limit).
  std::uint64_t max_range_results = std::uint64_t{1} << 20;
  /// CPU twin: worker threads a batch is spread over (0: one per hardware thread). The GPU map
  /// ignores it.
  unsigned threads = 0;
};

/// Checks a configuration: InvalidArgument naming the first bad field, or Ok. Runs on any
/// machine, so bad input gets the same error with or without a GPU. The universe, prediction
/// and max_range_results rules are the lock-free LIT's too (common.hpp).
Status check_config(const BatchConfig& config);

/// Sizes a checked configuration implies: root buckets and pool nodes.
struct RootLayout {
  std::uint64_t buckets = 0;
  std::uint64_t node_capacity = 0;
};
/// The layout of a configuration that passed check_config (unspecified otherwise).
RootLayout root_layout(const BatchConfig& config);

/// The root's lookup function: the bucket of `key` among `buckets` buckets of `width` keys from
/// `predicted_min`, clamped to the first and last bucket. Monotone in key, so bucket b's keys
/// are all below bucket b + 1's. Callable on both processors; costs one division.
DUET_HD inline std::uint64_t root_bucket(std::uint64_t predicted_min, std::uint64_t width, std::uint64_t buckets,
                                         std::uint64_t key) {
  if (key <= predicted_min) return 0;
  const std::uint64_t b = (key - predicted_min) / width;
  return b < buckets ? b : buckets - 1;
}

/// A point operation's code.
enum class BatchOp : std::uint8_t { kGet = 0, kInsert = 1, kRemove = 2, kUpsert = 3 };

/// A request's outcome (point operations and range queries).
enum class BatchStatus : std::uint8_t {
  kOk = 0,        ///< GET found, INSERT inserted, REMOVE removed, UPSERT inserted, range done
  kNotFound = 1,  ///< GET or REMOVE of an absent key
  kExists = 2,    ///< INSERT of a present key (nothing changed; out = the present value)
  kUpdated = 3,   ///< UPSERT replaced a present key's value (out = the previous value)
  kInvalid = 4,   ///< bad request (see the top of this file); nothing changed
  kRetry = 5,     ///< the node pool was exhausted; nothing changed, submit it again later
};
/// "ok", "not_found", "exists", "updated", "invalid" or "retry" (the lock-free LIT's
/// to_string(Result) spells the outcomes they share the same way).
const char* to_string(BatchStatus s);

/// A batch of point operations: n entries of ops and keys; values is needed by INSERT and
/// UPSERT (may be null when the batch has none; such requests are then kInvalid).
struct PointBatch {
  const BatchOp* ops = nullptr;
  const std::uint64_t* keys = nullptr;
  const std::uint64_t* values = nullptr;
  std::size_t n = 0;
};

/// Where point outcomes go: status[i] and out[i] (GET/REMOVE: the value; UPSERT: the previous
/// value when kUpdated; INSERT: the present value when kExists; otherwise 0).
struct PointResults {
  BatchStatus* status = nullptr;
  std::uint64_t* out = nullptr;
};

/// A batch of range queries [starts[i], ends[i]] (inclusive). limit: most entries returned
/// per query (0 or above max_range_results: max_range_results). A query with more entries
/// returns the first `limit` in key order with more = 1 and resume = the first key left out
/// (page on by querying [resume, end] in a later batch).
struct RangeBatch {
  const std::uint64_t* starts = nullptr;
  const std::uint64_t* ends = nullptr;
  std::size_t n = 0;
  std::uint64_t limit = 0;
};

/// Range results in host memory, compact: query i's entries are keys/values[offsets[i] ..
/// offsets[i+1]) in ascending key order; offsets has n + 1 entries (exclusive prefix sums).
struct RangeResults {
  std::vector<std::uint64_t> offsets, keys, values;
  std::vector<BatchStatus> status;   ///< kOk or kInvalid (then the query has no entries)
  std::vector<std::uint8_t> more;    ///< 1 when the range has entries after the last returned
  std::vector<std::uint64_t> resume; ///< when more: the first key not returned
  std::uint64_t snapshot = 0;        ///< the map epoch whose end state the queries read
};

/// The same layout in memory owned by the map (GPU memory for the GPU map, host memory for the
/// CPU twin): valid until the next call on the map.
struct RangeResidentResults {
  const std::uint64_t* offsets = nullptr;  ///< n + 1 entries
  const std::uint64_t* keys = nullptr;
  const std::uint64_t* values = nullptr;
  const BatchStatus* status = nullptr;
  const std::uint8_t* more = nullptr;
  const std::uint64_t* resume = nullptr;
  std::uint64_t total = 0;  ///< offsets[n], in host memory
  std::uint64_t snapshot = 0;
};

/// Pool and structure counters (consistent between calls).
struct BatchStats {
  std::uint64_t epoch = 0;           ///< batches run so far
  std::uint64_t buckets = 0;         ///< root buckets
  std::uint64_t node_capacity = 0;   ///< nodes in the pool
  std::uint64_t nodes_touched = 0;   ///< pool high-water mark (nodes ever handed out)
  std::uint64_t nodes_free = 0;      ///< recycled nodes ready for the next batch
  std::uint64_t nodes_recycled = 0;  ///< nodes returned to the free list so far
};

/// A batched LIT. Made by make_cpu_batch_map or make_gpu_batch_map (or GpuMap::create); not
/// copyable.
class BatchMap {
 public:
  virtual ~BatchMap() = default;

  /// Runs one batch from host memory: points (may be empty) and, when ranges is non-null, range
  /// queries (see the top of this file for the guarantees). result arrays must hold points.n
  /// entries. InvalidArgument when a needed array is null (nothing runs); ResourceExhausted
  /// when some request got kRetry (the others ran) or memory for the range output is short
  /// (the point requests ran, the ranges report no entries); Internal on a device failure.
  /// Cost: a sort of the batch's updates by bucket, one pass over the updates, one over the
  /// GETs and range counts, a prefix sum, and a fill pass for the ranges (on the GPU map each
  /// a kernel, plus copies of the arrays across the bus both ways).
  virtual Status execute(const PointBatch& points, PointResults results, const RangeBatch* ranges,
                         RangeResults* range_results) = 0;

  /// As execute(), but every input and the point result arrays live in the backend's memory
  /// (GPU memory for the GPU map: no copies but the range total; host memory for the CPU twin),
  /// and range results stay in map-owned memory of the same kind (see RangeResidentResults).
  /// For benchmarks and for feeding GPU compute.
  virtual Status execute_resident(const PointBatch& points, PointResults results, const RangeBatch* ranges,
                                  RangeResidentResults* range_results) = 0;

  /// Range queries alone from host memory (a batch without point operations).
  Status range(const RangeBatch& ranges, RangeResults* out) { return execute({}, {}, &ranges, out); }

  /// Counters (on the GPU map, one small copy from the device).
  virtual BatchStats stats() = 0;
  /// The configuration the map was made with.
  virtual const BatchConfig& config() const = 0;
  /// Root bucket of a key (the lookup function), for tests that aim at one bucket.
  virtual std::uint64_t bucket_of(std::uint64_t key) const = 0;
  /// "cpu" or "gpu".
  virtual const char* backend() const = 0;
};

/// Creates the CPU twin: the batched algorithm on config.threads CPU threads over host memory.
/// InvalidArgument on a bad field (check_config); ResourceExhausted when host memory for the
/// root or the pool cannot be mapped. Memory is committed as nodes are first used.
Status make_cpu_batch_map(const BatchConfig& config, std::unique_ptr<BatchMap>* out);

/// Creates the GPU map on the current GPU (the same as GpuMap::create). InvalidArgument on a
/// bad field (checked with or without a GPU), Unavailable without CUDA or a GPU,
/// ResourceExhausted when device memory is short.
Status make_gpu_batch_map(const BatchConfig& config, std::unique_ptr<BatchMap>* out);

}  // namespace duet::lit
