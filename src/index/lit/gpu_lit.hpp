// LIT on the GPU (dissertation 6.4): the batched LIT (batch.hpp) run by warps of 32 lanes.
//
// The contract, the vocabulary and the configuration are the batched LIT's, shared with its CPU
// twin; this header gives them the GPU map's names and declares GpuMap, the GPU backend. Calls
// on one map run on one CUDA stream of its own. A build without CUDA or a machine without a GPU
// gets Status::Unavailable from GpuMap::create (after the configuration check).
#pragma once

#include <memory>

#include "duet/status.hpp"
#include "index/lit/batch.hpp"

namespace duet::lit {

/// The GPU map's names for the batched LIT's vocabulary (batch.hpp), one type each.
using GpuConfig = BatchConfig;
using GpuOp = BatchOp;
using GpuStatus = BatchStatus;
using GpuPointBatch = PointBatch;
using GpuPointResults = PointResults;
using GpuRangeBatch = RangeBatch;
using GpuRangeResults = RangeResults;
using GpuRangeDeviceResults = RangeResidentResults;
using GpuStats = BatchStats;

/// The GPU LIT: a BatchMap whose nodes, root and pool live in GPU memory. execute_resident takes
/// device arrays and leaves range results in device memory owned by the map.
class GpuMap : public BatchMap {
 public:
  /// Checks the configuration and builds an empty map on the current GPU (allocates the root
  /// and the node pool). InvalidArgument on a bad field, Unavailable without CUDA or a GPU,
  /// ResourceExhausted when device memory is short.
  static Status create(const GpuConfig& config, std::unique_ptr<GpuMap>* out);
  /// "gpu".
  const char* backend() const override { return "gpu"; }
};

}  // namespace duet::lit
