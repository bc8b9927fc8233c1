// LIT on the GPU (dissertation 6.4): an ordered map of 8-byte keys to 8-byte values with
// batched point operations and linearizable range queries, run by warps of 32 lanes.
//
// Semantics per request are those of the CPU LIT (index/lit/lit.hpp): GET, INSERT (fails when
// present), REMOVE, UPSERT (returns the value it replaced) and RANGE_QUERY over [start, end]
// inclusive, on keys in [universe_min, universe_max]. Work arrives in batches:
//  * every request of a batch is linearizable, and the requests of one batch run concurrently,
//    so two requests on the same key in one batch take effect in some serial order (not
//    necessarily their index order);
//  * every range query of a batch reads the snapshot of the map taken when the batch starts,
//    i.e. after every earlier batch and before any update of its own batch (it linearizes at
//    the batch's start). Its result equals the map's contents in [start, end] at that instant;
//  * point operations see the updates of earlier batches, and of their own batch in the order
//    the map applied them.
// Bad input never gives a wrong answer: a key outside the universe, an unknown op code, an
// INSERT/UPSERT without a values array, and a range with start > end or a bound outside the
// universe each get Status kInvalid for that request alone (nothing changes).
//
// Calls on one map are thread-safe and serialised (one stream per map). A build without CUDA
// or a machine without a GPU gets Status::Unavailable from GpuMap::create.
//
// What the GPU version omits relative to the CPU LIT and the seed: the index has one level
// whose buckets are fixed at creation (no SPLIT into deeper levels and no RESIZE), so keys
// outside [predicted_min, predicted_max] all gather in the first or last bucket, whose chain
// of nodes then grows and slows the operations that touch it (they stay correct).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "duet/status.hpp"

namespace duet::lit {

/// GPU map parameters. Checked by GpuMap::create (the error names the first bad field).
struct GpuConfig {
  /// Keys outside [universe_min, universe_max] are refused per request with kInvalid.
  std::uint64_t universe_min = 0;
  std::uint64_t universe_max = ~std::uint64_t{0};
  /// The range the root level spreads over its buckets (must lie inside the universe; keys
  /// outside go to the first or last bucket).
  std::uint64_t predicted_min = 0;
  std::uint64_t predicted_max = (std::uint64_t{1} << 20) - 1;
  /// Keys per root bucket: the root has ceil((predicted_max - predicted_min + 1) /
  /// bucket_width) buckets. 10 is the seed's GPU sizing (root = 1/10 of the key range), which
  /// keeps a bucket within one 32-pair node. At most 2^31 buckets.
  std::uint64_t bucket_width = 10;
  /// Nodes in the device pool (576 bytes each). 0: buckets + buckets / 2 + 2^20. A batch whose
  /// updates need more nodes than are free reports kRetry for those requests.
  std::uint64_t node_capacity = 0;
  /// Most entries one range query returns (and the cap for a larger per-batch limit).
  std::uint64_t max_range_results = std::uint64_t{1} << 20;
};

/// Checks a configuration: InvalidArgument naming the first bad field, or Ok. Runs on any
/// machine (GpuMap::create calls it first, so bad input gets the same error with or without a
/// GPU).
Status check_config(const GpuConfig& config);

/// A point operation's code.
enum class GpuOp : std::uint8_t { kGet = 0, kInsert = 1, kRemove = 2, kUpsert = 3 };

/// A request's outcome (point operations and range queries).
enum class GpuStatus : std::uint8_t {
  kOk = 0,        ///< GET found, INSERT inserted, REMOVE removed, UPSERT inserted, range done
  kNotFound = 1,  ///< GET or REMOVE of an absent key
  kExists = 2,    ///< INSERT of a present key (nothing changed; out = the present value)
  kUpdated = 3,   ///< UPSERT replaced a present key's value (out = the previous value)
  kInvalid = 4,   ///< bad request (see the top of this file); nothing changed
  kRetry = 5,     ///< the node pool was exhausted; nothing changed, submit it again later
};
const char* to_string(GpuStatus s);

/// A batch of point operations: n entries of ops and keys; values is needed by INSERT and
/// UPSERT (may be null when the batch has none; such requests are then kInvalid).
struct GpuPointBatch {
  const GpuOp* ops = nullptr;
  const std::uint64_t* keys = nullptr;
  const std::uint64_t* values = nullptr;
  std::size_t n = 0;
};

/// Where point outcomes go: status[i] and out[i] (GET/REMOVE: the value; UPSERT: the previous
/// value when kUpdated; INSERT: the present value when kExists; otherwise 0).
struct GpuPointResults {
  GpuStatus* status = nullptr;
  std::uint64_t* out = nullptr;
};

/// A batch of range queries [starts[i], ends[i]] (inclusive). limit: most entries returned
/// per query (0 or above max_range_results: max_range_results). A query with more entries
/// returns the first `limit` in key order with more = 1 and resume = the first key left out
/// (page on by querying [resume, end] in a later batch).
struct GpuRangeBatch {
  const std::uint64_t* starts = nullptr;
  const std::uint64_t* ends = nullptr;
  std::size_t n = 0;
  std::uint64_t limit = 0;
};

/// Range results in host memory, compact: query i's entries are keys/values[offsets[i] ..
/// offsets[i+1]) in ascending key order; offsets has n + 1 entries (exclusive prefix sums).
struct GpuRangeResults {
  std::vector<std::uint64_t> offsets, keys, values;
  std::vector<GpuStatus> status;     ///< kOk or kInvalid (then the query has no entries)
  std::vector<std::uint8_t> more;    ///< 1 when the range has entries after the last returned
  std::vector<std::uint64_t> resume; ///< when more: the first key not returned
  std::uint64_t snapshot = 0;        ///< the map epoch whose end state the queries read
};

/// The same layout in GPU memory owned by the map: valid until the next call on the map.
struct GpuRangeDeviceResults {
  const std::uint64_t* offsets = nullptr;  ///< n + 1 entries
  const std::uint64_t* keys = nullptr;
  const std::uint64_t* values = nullptr;
  const GpuStatus* status = nullptr;
  const std::uint8_t* more = nullptr;
  const std::uint64_t* resume = nullptr;
  std::uint64_t total = 0;  ///< offsets[n], copied to the host
  std::uint64_t snapshot = 0;
};

/// Pool and structure counters, read from the device (consistent between calls).
struct GpuStats {
  std::uint64_t epoch = 0;           ///< batches run so far
  std::uint64_t buckets = 0;         ///< root buckets
  std::uint64_t node_capacity = 0;   ///< nodes in the pool
  std::uint64_t nodes_touched = 0;   ///< pool high-water mark (nodes ever handed out)
  std::uint64_t nodes_free = 0;      ///< recycled nodes ready for the next batch
  std::uint64_t nodes_recycled = 0;  ///< nodes returned to the free list so far
};

/// The GPU LIT. Create with create(); not copyable.
class GpuMap {
 public:
  /// Checks the configuration and builds an empty map on the current GPU (allocates the root
  /// and the node pool). InvalidArgument on a bad field, Unavailable without CUDA or a GPU,
  /// ResourceExhausted when device memory is short.
  static Status create(const GpuConfig& config, std::unique_ptr<GpuMap>* out);
  virtual ~GpuMap() = default;

  /// Runs one batch from host memory: points (may be empty) and, when ranges is non-null,
  /// range queries, concurrently in one kernel (see the top of this file for the guarantees).
  /// Copies the arrays across the bus both ways. result arrays must hold points.n entries.
  /// InvalidArgument when a needed array is null (nothing runs); ResourceExhausted when some
  /// request got kRetry (the others ran) or device memory for the range output is short;
  /// Internal on a device failure. Cost: one kernel over the batch, plus for ranges a count
  /// pass, a CUB scan, a read-back of the total and a fill pass.
  virtual Status execute(const GpuPointBatch& points, GpuPointResults results, const GpuRangeBatch* ranges,
                         GpuRangeResults* range_results) = 0;

  /// As execute(), but every input and the point result arrays live in GPU memory (no copies
  /// but the range total); range results stay in map-owned GPU memory (see
  /// GpuRangeDeviceResults). For benchmarks and for feeding GPU compute.
  virtual Status execute_resident(const GpuPointBatch& points, GpuPointResults results,
                                  const GpuRangeBatch* ranges, GpuRangeDeviceResults* range_results) = 0;

  /// Range queries alone from host memory (a batch without point operations).
  Status range(const GpuRangeBatch& ranges, GpuRangeResults* out) { return execute({}, {}, &ranges, out); }

  /// Counters (one small copy from the device).
  virtual GpuStats stats() = 0;
  virtual const GpuConfig& config() const = 0;
  /// Root bucket of a key (the lookup function), for tests that aim at one bucket.
  virtual std::uint64_t bucket_of(std::uint64_t key) const = 0;
};

}  // namespace duet::lit
