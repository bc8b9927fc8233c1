// The GPU side of duet_bench_cods (gpu.cu; gpu_none.cpp in a build without CUDA): the CODS GPU
// batch driver (src/index/cods/gpu_batch.hpp) and the GPU peers (L-Slab, the batched GPU LIT)
// on pre-generated work, and the GPU's random-access limit.
//
// Each repeat builds a fresh structure, prefills it with one batch of inserts (timed: the
// insert rate into a growing structure) and runs the stream as one batch resident in GPU
// memory (timed on the host around execute_resident, so per-batch costs are included).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "duet/status.hpp"

namespace duet::bench::cods {

/// A CODS GPU configuration.
struct GpuPoint {
  std::string structure;  ///< "list", "hash" or "tree"
  unsigned k = 14;        ///< keys per node
  unsigned group = 16;    ///< lanes per request (1: one lane per request); mixed: per GET
  bool fully_atomic = true;
  std::uint64_t buckets = 1;  ///< hash only
  bool mixed = false;         ///< mixed mode: GETs on tiles of `group` lanes, updates on one lane each
  int order = 0;  ///< GpuConfig::order: 0 the default (kAuto), 1 GETs first ("-gf"), 2 index order ("-idx")
};

/// Seconds per repeat, and what the runs reported.
struct GpuTimes {
  std::vector<double> prefill_s, run_s;
  std::uint64_t retries = 0;        ///< requests reported kRetry (pool exhausted), summed
  std::uint64_t nodes_used = 0;     ///< nodes taken from the pool by the last repeat
  std::uint64_t hits = 0;           ///< found outcomes of the last repeat's run (a check)
};

/// True when a GPU is present; else *why says why.
bool gpu_present(std::string* why);
/// The GPU's name as the driver reports it ("cpu" without one).
std::string gpu_name();

/// CODS on the GPU. `stream` holds packed operations (workload.hpp).
Status gpu_run_cods(const GpuPoint& p, const std::vector<std::uint64_t>& prefill,
                    const std::vector<std::uint64_t>& stream, unsigned repeats, GpuTimes* out);
/// L-Slab's GPU map (slab width 8, its fastest) on the same work: insert = PUT, remove = DELETE.
Status gpu_run_lslab(std::uint64_t expected_keys, const std::vector<std::uint64_t>& prefill,
                     const std::vector<std::uint64_t>& stream, unsigned repeats, GpuTimes* out);
/// The batched GPU LIT on the same work, its root over [0, range).
Status gpu_run_lit(std::uint64_t range, const std::vector<std::uint64_t>& prefill,
                   const std::vector<std::uint64_t>& stream, unsigned repeats, GpuTimes* out);
/// Random 8-byte loads over an array of `bytes` (one dependent-free load per thread, summed so
/// the compiler keeps it): seconds per repeat for `loads` loads.
Status gpu_random_loads(std::uint64_t bytes, std::uint64_t loads, unsigned repeats, std::vector<double>* seconds);

}  // namespace duet::bench::cods
