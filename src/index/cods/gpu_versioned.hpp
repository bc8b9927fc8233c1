// The GPU batch driver of the CODS versioned B-link tree (gpu_versioned.cu): the DUET_HD
// algorithm of versioned_blink_tree.hpp run by tiles of `group` lanes, one request per tile at a
// time, or by one lane per request, or in mixed mode (GET and RANGE on tiles, each update on a
// lane of its own; GpuMode in common.hpp), with nodes from a pool in GPU memory. Plain C++ (no
// CUDA types).
//
// Batch semantics: a batch is stamped with the next timestamp t. GET, INSERT and REMOVE act on
// the latest state and are linearizable, the requests of one batch running concurrently (two on
// one key take effect in some serial order), every update stamped t. Every RANGE of the batch
// reads snapshot t - 1: the state before the batch, whatever the batch's updates do meanwhile
// (the CPU twin, CpuVersionedBLinkTree::execute, gives the same), or, through execute_at, a
// snapshot held since an earlier batch (hold_snapshot). Batches run one at a time (execute()
// calls are serialized), so the live snapshots during batch t are the held ones and t - 1 when
// the batch holds RANGEs: a leaf's content is saved at its first update in a batch when a live
// snapshot reads it, never when none is live (its cost then is the plain tree's), and saved
// versions are cut at a later update once no live snapshot reads them, and reused once that
// batch has ended.
//
// Nodes come from a pool in GPU memory of `pool_nodes` nodes that grows, doubling, up to
// `pool_max_nodes`. A request that needs a node when the pool is empty reports kRetry having
// changed nothing; the driver then grows the pool (between runs: nodes never move) and runs
// those requests again within the same execute(), stamped with the same batch timestamp. They
// are updates (GET and RANGE take no node), and every RANGE of the batch has already read
// snapshot t - 1, so the rerun needs no saved versions. Only when the pool cannot grow (its
// maximum, or GPU memory is short) do requests stay kRetry, and execute() returns
// ResourceExhausted.
#pragma once

#include <cstdint>
#include <memory>

#include "duet/status.hpp"
#include "index/cods/versioned_blink_tree.hpp"

namespace duet::cods::ds {

/// What to build. Supported (keys_per_node, group): (14, 16) and (30, 32) in either mode, and
/// (14 | 30, 1) in kGroup mode (one lane per request, over the node layout of K's tile), both
/// regimes; any other pair or mode is InvalidArgument naming them.
struct GpuVersionedConfig {
  unsigned keys_per_node = 14;
  unsigned group = 16;  ///< lanes per request (kMixed: per GET or RANGE): 1 (kGroup only), 16 or 32
  GpuMode mode = GpuMode::kGroup;
  Regime regime = Regime::kFullyAtomic;
  std::uint64_t pool_nodes = 1u << 20;  ///< nodes in the pool at first (leaves, saved versions, index), 2 to 2^32
  /// The most nodes the pool may grow to (pool_nodes to 2^32; GPU memory may stop it sooner).
  /// Set it to pool_nodes for a fixed pool.
  std::uint64_t pool_max_nodes = std::uint64_t(1) << 32;
};

class GpuVersionedTree {
 public:
  virtual ~GpuVersionedTree() = default;
  /// Runs a batch held in host memory (values[i]: an INSERT's value, a RANGE's last key; see
  /// VersionedBatchResult for the outcomes). InvalidArgument (nothing runs) for a null array the
  /// batch needs or a RANGE whose first key is above its last; ResourceExhausted when the pool
  /// ran out and could not grow (requests marked kRetry changed nothing); Internal on a CUDA failure. Unknown op
  /// codes are kInvalid per request.
  virtual Status execute(const Batch& batch, VersionedBatchResult& result) = 0;
  /// As execute(), with every array in GPU memory; a RANGE whose first key is above its last is
  /// kInvalid for that request.
  virtual Status execute_resident(const Batch& batch, VersionedBatchResult& result) = 0;
  /// Holds a snapshot of the state after every batch that has returned so far and returns its
  /// timestamp; RANGEs of later batches read it through execute_at. Every version it reads is
  /// kept (the pool may grow for them) until release_snapshot. Waits for a batch in flight.
  virtual std::uint64_t hold_snapshot() = 0;
  /// Releases one hold of `snapshot`; InvalidArgument when it is not held.
  virtual Status release_snapshot(std::uint64_t snapshot) = 0;
  /// Snapshots held now.
  virtual std::uint64_t held_snapshots() = 0;
  /// As execute(), with every RANGE of the batch reading held snapshot `snapshot` instead of
  /// the state before the batch (its updates still act on the latest state).
  /// InvalidArgument, nothing run, when the snapshot is not held.
  virtual Status execute_at(std::uint64_t snapshot, const Batch& batch, VersionedBatchResult& result) = 0;
  /// Nodes taken from the pool's fresh memory so far.
  virtual std::uint64_t nodes_used() const = 0;
  /// Nodes retired (saved versions cut, spares discarded) and recycled so far.
  virtual std::uint64_t nodes_recycled() const = 0;
  /// Nodes in the pool now (pool_nodes, more once it grew).
  virtual std::uint64_t pool_capacity() const = 0;
};

/// Checks `config` as make_gpu_versioned_tree does before it looks for a GPU: OK, or
/// InvalidArgument naming the first problem: an unknown regime or mode; pool_nodes outside
/// [2, 2^32]; pool_max_nodes outside [pool_nodes, 2^32]; a (keys_per_node, group) pair that is
/// not built (the message lists those that are); group 1 in kMixed mode. Plain C++
/// (gpu_batch_config.cpp), compiled in every build, with or without CUDA; touches no GPU.
Status check_gpu_versioned_config(const GpuVersionedConfig& config);

/// Creates the tree on the current GPU. In every build, with or without CUDA: InvalidArgument for
/// a null `out` or a bad configuration (check_gpu_versioned_config's status), before anything
/// else; then Unavailable without a GPU (in a build without CUDA, gpu_batch_none.cpp, always);
/// ResourceExhausted when GPU memory is short.
Status make_gpu_versioned_tree(const GpuVersionedConfig& config, std::unique_ptr<GpuVersionedTree>* out);

}  // namespace duet::cods::ds
