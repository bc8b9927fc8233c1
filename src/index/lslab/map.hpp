// L-Slab maps: the CPU twin and the GPU map behind one interface.
//
// A Map holds 8-byte keys and values. execute() runs a batch: every request in it is
// linearizable, and requests of one batch run concurrently, so two requests on the same key
// in one batch take effect in some serial order (not necessarily the batch's index order).
// Separate execute() calls on one map may run concurrently from different threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "duet/status.hpp"
#include "index/lslab/types.hpp"

namespace duet::lslab {

/// An independent submission path into a map, with its own staging buffers (pinned host
/// memory when a GPU is present) and, on a GPU, its own stream: KVCG's orchestrator owns one.
/// Lanes of one map run concurrently with each other; one lane is used by one thread at a time.
class Lane {
 public:
  virtual ~Lane() = default;
  /// Staging arrays for a batch of up to n requests, filled by the caller before run().
  /// Pointers stay valid until the next reserve(). ResourceExhausted when memory is short.
  virtual Status reserve(std::size_t n, Op** ops, std::uint64_t** keys, std::uint64_t** values) = 0;
  /// Runs the first n staged requests (n <= the last reserve()); *status and *out point at
  /// the outcomes, valid until the next call. Errors as Map::execute.
  virtual Status run(std::size_t n, const OpStatus** status, const std::uint64_t** out) = 0;
};

class Map {
 public:
  virtual ~Map() = default;

  /// Runs batch.n requests and writes their outcomes to result. Returns InvalidArgument when
  /// a needed array is null (nothing runs), ResourceExhausted when the slab pool cannot grow
  /// to hold a PUT (requests that ran keep their effects and outcomes; the others report
  /// kRetry and changed nothing), Internal on a device failure (the batch may then have been
  /// applied in part or in whole, and its outcomes are not reported). A zero-size batch is a no-op.
  /// Per-request problems (the reserved key, an unknown op) are OpStatus::kInvalid, not errors.
  virtual Status execute(const Batch& batch, BatchResult& result) = 0;

  /// As execute(), but every array lives in the backend's own memory: host memory for the
  /// CPU twin, GPU memory for the GPU map (no copies across the bus). For pipelines and
  /// benchmarks that keep their batches on the device.
  virtual Status execute_resident(const Batch& batch, BatchResult& result) = 0;

  /// Memory counters, consistent after execute() returns.
  virtual PoolStats stats() const = 0;

  /// "cpu" or "gpu".
  virtual const char* backend() const = 0;

  /// Keys per slab and slab width in words (width - 2 keys per slab).
  virtual unsigned slab_width() const = 0;
  /// Opens a lane (see Lane). The map must outlive it. The default lane stages in host
  /// memory and calls execute().
  virtual Status open_lane(std::unique_ptr<Lane>* out);
  /// Appends every stored key and its value to keys/values (any order). Meant for a quiescent
  /// map (closing, flushing): entries written concurrently may or may not appear. Costs a read
  /// of the whole index (on a GPU, copied to the host in pieces).
  virtual Status export_entries(std::vector<std::uint64_t>* keys, std::vector<std::uint64_t>* values) = 0;
  /// Cursor iteration for SCAN: appends the entries of up to max_slabs slabs starting at slab
  /// position `from` (bucket heads first, then the overflow pool in index order) and sets *next
  /// to the position to continue from, or 0 when the walk reached the end. Safe while batches
  /// run: a key stays in its slab while it exists, so every key present during the whole walk
  /// is returned exactly once; keys written or deleted meanwhile may or may not appear.
  /// Costs max_slabs slab reads (on a GPU, one copy to the host per contiguous piece).
  virtual Status export_range(std::uint64_t from, std::uint64_t max_slabs, std::vector<std::uint64_t>* keys,
                              std::vector<std::uint64_t>* values, std::uint64_t* next) = 0;
};

/// Creates the CPU twin, running batches on config.threads threads. slab_width is 8, 16 or
/// 32 (8 fits the keys of a slab in one 64-byte cache line). Bad sizing gives InvalidArgument;
/// bucket heads for expected_keys larger than half of physical memory, ResourceExhausted.
Status make_cpu_map(const Config& config, std::unique_ptr<Map>* out, unsigned slab_width = 8);

/// Creates a map on the current GPU (see gpu/device.hpp). slab_width is 8, 16 or 32 (one
/// group of that many lanes per operation); 8 measured fastest for GET and PUT (docs/lslab.md). Unavailable when the build has no CUDA or no
/// GPU is present; ResourceExhausted when device memory is short.
Status make_gpu_map(const Config& config, std::unique_ptr<Map>* out, unsigned slab_width = 8);

/// Checks a configuration; the error names the first bad field.
Status validate_config(const Config& config);

/// Number of head slabs (buckets) for a configuration and slab width.
std::uint64_t bucket_count(const Config& config, unsigned slab_width);

}  // namespace duet::lslab
