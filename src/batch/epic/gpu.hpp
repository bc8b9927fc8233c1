// Epic on the GPU: planning (Alg. 2-4 with CUB/Thrust: pack, radix sort on the record bits,
// exclusive segmented scans both ways, classes, the global temp-write scan, scatter) and execution
// (a warp per txn, txns handed to warps in serial order by a per-block grab of a global counter;
// lane 0 resolves and spins, the warp copies). Host-only header; gpu.cu implements it, and
// gpu_none.cpp reports the GPU absent in builds without CUDA.
#pragma once

#include <memory>
#include <string>

#include "batch/epic/engine.hpp"

namespace duet::batch::epic {

/// Which procedure set the device executor runs (device code is compiled per set).
enum class ProcSet { kMix, kYcsb, kTpcc };

/// GPU phase times of one epoch, in milliseconds (CUDA events / host clock).
struct GpuTimes {
  double h2d_ms = 0, plan_ms = 0, d2h_ms = 0, exec_ms = 0, gc_ms = 0;
};

/// Device planner and executor. Every call returns false with *err on a CUDA failure; the host
/// database is then as it was after the last successful epoch (device tables must be uploaded
/// again).
class GpuRunner {
 public:
  virtual ~GpuRunner() = default;
  /// Plans on the device and copies the plan to the host (Epic-CPU; the plan-equality tests).
  virtual bool plan(const Batch& b, const std::vector<std::uint32_t>& global, Plan* out, std::string* err,
                    GpuTimes* times = nullptr) = 0;
  /// Copies the database's tables to the device (before GPU epochs).
  virtual bool upload(const Database& db, std::string* err) = 0;
  /// Copies the device tables back to the host database.
  virtual bool download(Database& db, std::string* err) = 0;
  /// One GPU epoch over the uploaded tables: index on the host, plan and execute on the device,
  /// deleted-bit scan on the device, ids freed on the host. Reruns are reported, not kept.
  virtual bool run_epoch(Database& db, const Batch& b, EpochOutput* out, std::string* err, GpuTimes* times = nullptr,
                         int warps_per_block = 4, bool block_index_order = false) = 0;
  /// The longest sleep (ns) between two polls of a waiting lane (default 4096). Shorter sleeps
  /// pass versions along contended chains sooner and cost more polling traffic.
  virtual void set_max_backoff_ns(unsigned ns) = 0;
};

/// True when a CUDA device is usable; otherwise *why says why.
bool gpu_available(std::string* why);
/// The device's name ("cpu" without one).
std::string gpu_name();
/// A runner for `set`, or nullptr (and *err) without a GPU.
std::unique_ptr<GpuRunner> make_gpu_runner(ProcSet set, std::string* err);

/// A Planner for Engine that plans on the GPU (Epic-CPU placement).
inline Planner gpu_planner(std::shared_ptr<GpuRunner> g) {
  return [g](const Batch& b, const std::vector<std::uint32_t>& gl, Plan* p, std::string* e) { return g->plan(b, gl, p, e); };
}

}  // namespace duet::batch::epic
