// Epic on the GPU: planning (Alg. 2-4 with CUB/Thrust: pack, radix sort on the record bits,
// exclusive segmented scans both ways, classes, the global temp-write scan, scatter) and execution
// (a warp per txn, txns handed to warps in serial order by a per-block grab of a global counter;
// lane 0 resolves and spins, the warp copies). Host-only header; gpu.cu implements it, and
// gpu_none.cpp reports the GPU absent in builds without CUDA. Indexing of GPU epochs runs on the
// device by default (L-Slab, insert-first, a device-resident FIFO free ring; docs/epic.md), or on
// the host database (the CPU twin) when asked.
#pragma once

#include <exception>
#include <memory>
#include <string>

#include "batch/epic/device_executor.hpp"
#include "batch/epic/engine.hpp"

namespace duet::batch::epic {

/// Which procedure set the device executor runs (device code is compiled per set).
enum class ProcSet { kMix, kYcsb, kTpcc };
/// How a GPU epoch's txns reach warps. kCounter: each block takes the next range from a global
/// counter when it starts, so txns start in serial order whatever order the hardware starts
/// blocks in (the only correct one). kBlockIndex: block b runs txns b*wpb.. (the seed's "never"):
/// wrong because CUDA does not promise to start blocks in index order; kReversedBlockIndex makes
/// the worst such order certain, so the watchdog's report of the stuck wait is tested.
enum class BlockOrder : std::uint32_t { kCounter = 0, kBlockIndex = 1, kReversedBlockIndex = 2 };

/// GPU phase times of one epoch, in milliseconds (host clock around synchronised device work).
/// index_ms is the device indexing time with GPU indexing and the host indexing time otherwise.
struct GpuTimes {
  double h2d_ms = 0, plan_ms = 0, d2h_ms = 0, exec_ms = 0, gc_ms = 0, index_ms = 0;
  double pack_ms = 0;  ///< the host's packing of the staging buffer, part of h2d_ms (packed transfers)
};

/// Where a GPU epoch indexes its keys. kGpu: the batch's keys go to the device once; missing
/// write keys of indexed tables are uniquified there (radix sort, unique), take ids from a
/// device-resident FIFO ring in first-occurrence order, and are inserted into one L-Slab map per
/// indexed table with back-links; then every key is looked up there. The ids, lookups and ring
/// state equal those of Database::index (the CPU twin) bit for bit. kHost: Database::index on
/// the host, as the CPU engines do.
enum class IndexOn { kGpu, kHost };

/// Device planner and executor. Every call returns false with *err on a CUDA failure; the host
/// database is then as it was after the last successful epoch (device tables must be uploaded
/// again). As a DevicePlanner (Epic-CPU: attach, index_and_plan, release, sync) it indexes on
/// L-Slab and plans on the device for an Engine that executes on the host; the plan comes back
/// in one copy into pinned memory, from which the host executes. A runner holds one index at a
/// time: attach() and upload() each replace it.
///
/// Transfers (default packed): each epoch's inputs go up in one copy from one pinned staging
/// buffer (per op an 8-byte key and a 1-byte table; per txn op_begin and nreads, and for GPU
/// execution proc, arg_begin, attempt and the args), and what comes back (outcomes and outputs,
/// or Epic-CPU's plan) comes in one copy into one pinned buffer. set_packed_transfers(false)
/// restores the earlier transfers (a pageable copy per array, 16-byte Key structs), for A/B runs.
class GpuRunner : public DevicePlanner {
 public:
  virtual ~GpuRunner() = default;
  /// Plans on the device and copies the plan to the host (Epic-CPU; the plan-equality tests).
  virtual bool plan(const Batch& b, const std::vector<std::uint32_t>& global, Plan* out, std::string* err,
                    GpuTimes* times = nullptr) = 0;
  /// Chooses where run_epoch indexes (default kGpu). Takes effect at the next upload().
  virtual void set_index_on(IndexOn where) = 0;
  virtual IndexOn index_on() const = 0;
  /// Copies the database's tables to the device (before GPU epochs). With GPU indexing also its
  /// index: free ring (in ring order), back-links and key -> id entries (into fresh L-Slab maps).
  virtual bool upload(const Database& db, std::string* err) = 0;
  /// Copies the device tables back to the host database; with GPU indexing also the ring, the
  /// back-links and the index entries, so the host database then equals the device state.
  virtual bool download(Database& db, std::string* err) = 0;
  /// GPU indexing alone, over the uploaded index (insert-first, as Database::index): fills *out
  /// on the host. False (nothing inserted, ring unchanged) with *err when an indexed table runs
  /// out of ids or a write key of an indexed table is 2^64-1 (L-Slab reserves it), or on a CUDA
  /// failure. For tests and for callers that execute on the host.
  virtual bool index(const Database& db, const Batch& b, Indexed* out, std::string* err) = 0;
  /// One GPU epoch over the uploaded tables: index (see IndexOn), plan and execute on the device,
  /// deleted-bit scan on the device; freed ids return to the ring in id order (on the device
  /// with GPU indexing, else on the host database). Reruns are reported, not kept.
  /// `order` says how txns reach warps: BlockOrder::kCounter in production; the other two are
  /// the negative control of the seed's rule (never by block index).
  virtual bool run_epoch(Database& db, const Batch& b, EpochOutput* out, std::string* err, GpuTimes* times = nullptr,
                         int warps_per_block = 4, BlockOrder order = BlockOrder::kCounter) = 0;
  /// After a run_epoch that returned false: whether it failed before changing the index or the
  /// tables (an indexed table out of ids, a bad key, an allocation before the first insert).
  virtual bool last_epoch_untouched() const = 0;
  /// One committed record of the uploaded tables (DeviceExecutor::read): the key's id from the
  /// device index (or db's, with host indexing), then the record's two versions, in two small
  /// copies.
  virtual bool read_record(const Database& db, std::uint32_t table, std::uint64_t key, std::vector<std::uint32_t>* rec,
                           bool* found, std::string* err) = 0;
  /// fits() for a whole epoch on the device (run_epoch): also holds the buffers execution adds
  /// (the scratchpad's data, outcomes and outputs). False (with *why) when they do not fit.
  virtual bool fits_execution(const Batch& b, std::string* why) = 0;
  /// Planted bugs for the negative controls (Faults::eid_before_data is the one the GPU honours;
  /// it widens its window by sleeping 20 µs between the eid and the data).
  virtual void set_faults(const Faults& f) = 0;
  /// Cycles a waiting lane may wait before the epoch fails as a stuck wait (default about 10 s).
  virtual void set_watchdog_cycles(std::uint64_t cycles) = 0;
  /// The longest sleep (ns) between two polls of a waiting lane (default 1024: on the H200
  /// machine it ran contended TPC-C 28-35% faster than 4096, and 512 was no better). Shorter
  /// sleeps pass versions along contended chains sooner and cost more polling traffic.
  virtual void set_max_backoff_ns(unsigned ns) = 0;
  /// Whether a txn's lanes wait for all its reads at once before its procedure runs (true, the
  /// default), or lane 0 waits for each read when the procedure asks for it (false: the earlier
  /// executor, kept for A/B runs). Results are the same either way.
  virtual void set_gather_reads(bool on) = 0;
  /// Packed transfers through pinned staging (true, the default) or one pageable copy per array.
  virtual void set_packed_transfers(bool packed) = 0;
  /// Host threads that pack the staging buffer (default: the hardware's, at most 16). They are
  /// the calling thread's WorkPool (pool.hpp), which an Engine on that thread shares when its
  /// thread count is the same; set it to the engine's threads (a pool is rebuilt when a thread
  /// asks for another size).
  virtual void set_host_threads(int threads) = 0;
};

/// True when a CUDA device is usable; otherwise *why says why.
bool gpu_available(std::string* why);
/// The device's name ("cpu" without one).
std::string gpu_name();
/// A runner for `set`, or nullptr (and *err) without a GPU.
std::unique_ptr<GpuRunner> make_gpu_runner(ProcSet set, std::string* err);

/// Epic on the GPU as an Engine's DeviceExecutor (placement kGpuExec): the runner indexes, plans
/// and executes whole epochs over the tables it holds (uploaded, downloaded on demand).
class GpuExecutor final : public DeviceExecutor {
 public:
  explicit GpuExecutor(std::shared_ptr<GpuRunner> g) : g_(std::move(g)) {}
  bool upload(const Database& db, std::string* err) override { return guard(err, [&] { return g_->upload(db, err); }); }
  bool download(Database& db, std::string* err) override {
    return guard(err, [&] { return g_->download(db, err); });
  }
  bool run_epoch(Database& db, const Batch& b, EpochOutput* out, std::string* err, bool* untouched) override {
    *untouched = false;
    const bool ok = guard(err, [&] { return g_->run_epoch(db, b, out, err); });
    if (!ok) *untouched = g_->last_epoch_untouched();
    return ok;
  }
  bool read(const Database& db, std::uint32_t table, std::uint64_t key, std::vector<std::uint32_t>* rec, bool* found,
            std::string* err) override {
    return guard(err, [&] { return g_->read_record(db, table, key, rec, found, err); });
  }
  bool fits(const Batch& b, std::string* why) override { return g_->fits_execution(b, why); }

 private:
  // Thrust reports device failures by throwing: they fail the call like any other.
  template <class F>
  static bool guard(std::string* err, F f) {
    try {
      return f();
    } catch (const std::exception& e) {
      return *err = std::string("GPU: ") + e.what(), false;
    }
  }
  std::shared_ptr<GpuRunner> g_;
};

/// A Planner for Engine that plans on the GPU (Epic-CPU placement).
inline Planner gpu_planner(std::shared_ptr<GpuRunner> g) {
  return [g](const Batch& b, const std::vector<std::uint32_t>& gl, Plan* p, std::string* e) { return g->plan(b, gl, p, e); };
}

}  // namespace duet::batch::epic
