// The conflict DAG built on the GPU (Alg. 15): the access sets are copied to the device, kernel 1
// runs the tiled all-pairs conflict check with the union-find in global memory (one thread block
// per tile pair of the upper triangle), kernel 2 writes each transaction's root, and the root
// array comes back in one copy. A block of one tile (kFusedMaxTxs) runs as one fused kernel.
//
// A GpuDag is one slot: one stream, device buffers and pinned host buffers; launch() returns at
// once, wait() collects. Several slots keep several blocks in flight. Not thread-safe: one
// owner per slot.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "batch/orangutan/dag.hpp"
#include "duet/status.hpp"

namespace duet::batch::orangutan {

/// The result's shape (item 4, kernel 2): per-transaction roots, or the seed's dense
/// upper-triangular bit matrix D (n <= kMaxMatrixTxs), converted to roots on the host.
enum class DagForm : std::uint8_t { kRoots = 0, kMatrix = 1 };

constexpr std::size_t kFusedMaxTxs = 256;  // one tile
constexpr std::size_t kMaxMatrixTxs = 8192;

class GpuDag {
 public:
  virtual ~GpuDag() = default;
  /// Starts building the DAG of txs[0, n) (n <= the slot's capacity); returns without waiting.
  /// The caller's array may change once launch() returns (it is staged first).
  virtual Status launch(const Tx* txs, std::size_t n, DagForm form = DagForm::kRoots, DagFaults faults = {}) = 0;
  /// Waits for the last launch and gives its root array (n entries, valid until the next
  /// launch). An error (a failed kernel or copy) leaves *root untouched.
  virtual Status wait(const std::uint32_t** root) = 0;
  /// Whether the last launch has finished (true before any launch): a busy slot is not
  /// relaunched, since staging would wait for it.
  virtual bool idle() = 0;
  /// The slot's capacity in transactions.
  virtual std::size_t capacity() const = 0;
};

/// A slot for blocks of up to max_txs transactions. kUnavailable without a GPU (or in a build
/// without CUDA); kResourceExhausted when its buffers cannot be allocated.
Status make_gpu_dag(std::size_t max_txs, std::unique_ptr<GpuDag>* out);

}  // namespace duet::batch::orangutan
