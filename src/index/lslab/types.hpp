// L-Slab's public vocabulary: operations, per-operation outcomes, batches and configuration.
// Plain C++ with no CUDA dependency, shared by the CPU twin, the GPU map and their callers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace duet::lslab {

/// The key no caller may use: it marks an empty slot inside slabs.
inline constexpr std::uint64_t kReservedKey = ~std::uint64_t(0);

/// One request of a batch.
enum class Op : std::uint8_t {
  kGet = 0,     ///< read the value of a key
  kPut = 1,     ///< insert or overwrite; returns the previous value if there was one
  kDelete = 2,  ///< remove; returns the previous value if there was one
};

/// Outcome of one request.
enum class OpStatus : std::uint8_t {
  kFound = 0,     ///< the key was present; the result value is its (previous) value
  kNotFound = 1,  ///< the key was absent; the result value is 0
  kRetry = 2,     ///< the slab pool could not grow: the PUT was not applied (execute() then
                  ///< returns ResourceExhausted)
  kInvalid = 3,   ///< the key is kReservedKey or the op code is unknown; nothing was changed
};

/// Returns "found", "not_found", "retry" or "invalid".
const char* op_status_name(OpStatus s);

/// A batch of n requests in structure-of-arrays form (host memory for execute()).
/// `values` is read for kPut only and may be null when the batch holds no kPut.
struct Batch {
  const Op* ops = nullptr;
  const std::uint64_t* keys = nullptr;
  const std::uint64_t* values = nullptr;
  std::size_t n = 0;
};

/// Where execute() writes the outcome of request i: status[i] and values[i].
struct BatchResult {
  OpStatus* status = nullptr;
  std::uint64_t* values = nullptr;
};

/// How GET finds its key.
enum class ReadPolicy : std::uint8_t {
  kOptimistic = 0,  ///< read without locking, validated by the bucket's version (default)
  kShared = 1,      ///< take the bucket's reader lock, as the seed does
};

/// Where the index and the slab pool live on a GPU.
enum class Placement : std::uint8_t {
  kDevice = 0,   ///< GPU memory (fastest)
  kManaged = 1,  ///< CUDA managed memory: capacity beyond the GPU's, pages migrate on demand
};

/// Sizing and behaviour of a map. Every field has a sensible default.
struct Config {
  /// Keys the map is sized for; buckets = expected_keys / (load_factor * keys per slab).
  std::uint64_t expected_keys = 1u << 20;
  /// Fraction of head-slab slots expected to be filled (0.05 to 1.0).
  double load_factor = 0.7;
  /// Overflow slabs allocated up front (0: expected_keys / 16 / keys per slab, at least 4096).
  std::uint64_t initial_pool_slabs = 0;
  /// Upper bound on overflow slabs (0: no bound beyond memory and 2^32 - 2).
  std::uint64_t max_pool_slabs = 0;
  ReadPolicy read_policy = ReadPolicy::kOptimistic;
  Placement placement = Placement::kDevice;
  /// CPU twin: worker threads for batches (0: all hardware threads).
  unsigned threads = 0;
};

/// Counters describing a map's memory; cheap to read.
struct PoolStats {
  std::uint64_t buckets = 0;          ///< head slabs, allocated once
  std::uint64_t pool_capacity = 0;    ///< overflow slabs committed
  std::uint64_t pool_handed_out = 0;  ///< overflow slabs ever taken from fresh memory
  std::uint64_t pool_free = 0;        ///< overflow slabs freed and waiting for reuse
  std::uint64_t pool_grows = 0;       ///< times the pool was grown
  std::uint64_t slab_bytes = 0;       ///< bytes per slab
};

}  // namespace duet::lslab
