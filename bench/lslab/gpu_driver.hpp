// The GPU side of the benchmark (compiled only when the build has CUDA).
#pragma once

#include <string>
#include <vector>

#include "duet/status.hpp"
#include "options.hpp"
#include "report.hpp"

namespace duet::bench::lslab {

/// Runs the bandwidth probes, then duet-gpu (make_gpu_map) for every slab width, R, load
/// factor, op and batch of `o`, each twice: batches resident in GPU memory (execute_resident)
/// and end to end from host arrays (execute). Appends records in run order and sets
/// *device_name to the GPU's name. Returns Unavailable when there is no GPU.
duet::Status run_gpu_benchmark(const Options& o, std::vector<Record>* records, std::string* device_name);

}  // namespace duet::bench::lslab
