// What one of Epic's epochs returns (Engine::run_epoch): per executed txn its tag, attempt,
// outcome and outputs, and the epoch's phase times. Its own header so that readers of results
// (the serial-equivalence checker) need none of the engine's indexing, planning or execution.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "batch/epic/database.hpp"

namespace duet::batch::epic {

/// Wall time of one epoch's phases, in milliseconds.
struct EpochStats {
  std::size_t txns = 0;     ///< txns run (a txn split into pieces counts once: Batch::txn_count)
  std::size_t entries = 0;  ///< txns and pieces planned and executed (Batch::size)
  std::uint32_t temp_count = 0;
  double index_ms = 0, plan_ms = 0, exec_ms = 0, gc_ms = 0, total_ms = 0;
  double transfer_ms = 0;  ///< with a DevicePlanner: keys to the device and plans back (else 0)
  int exec_threads = 0;    ///< threads that executed the epoch (see Engine::set_wait_fallback)
  std::uint64_t waited_ns = 0;  ///< time the executing threads spent in long waits (EpochView::waited)
  bool exec_affinity = false;   ///< the threads took txns from per-thread queues (Engine::set_exec_order)
  double cross_share = 0;       ///< kAuto's sampled share of temp reads whose writer was in another queue
  bool planned_on_host = false;  ///< a DevicePlanner could not take the epoch (DevicePlanner::fits)
  bool small_on_host = false;    ///< planned on the host as a small epoch (set_min_device_epoch_ops)
  bool on_device = false;        ///< indexed, planned and executed by a DeviceExecutor
  bool cost_model_on_host = false;  ///< the device could run it; the CPU threads did, by the cost model (ExecSide)
  bool moved_tables = false;     ///< the tables moved to where this epoch ran first (a copy of all of them)
};

/// What an epoch returns: per executed txn (pending reruns first) its tag, outcome and outputs.
struct EpochOutput {
  std::vector<std::uint64_t> tag;
  std::vector<std::uint32_t> attempt;
  Results results;
  EpochStats stats;
};

}  // namespace duet::batch::epic
