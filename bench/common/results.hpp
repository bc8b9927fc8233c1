// The result-file convention shared by Duet's benchmarks.
//
// A result file is one JSON object with the top-level keys
//   machine   {hostname, cores, memory_bytes, cpu_model, transparent_hugepages}
//   device    the GPU's name as the driver reports it, or "cpu"
//   commit    $DUET_COMMIT if set, else `git rev-parse HEAD` of the source tree, else "unknown"
//   date      ISO 8601 UTC time the run started, e.g. "2025-01-31T12:00:00Z"
//   benchmark the benchmark's name, e.g. "lslab"
//   config    every parameter of the run
//   records   one object per measurement (fields are benchmark-specific; see each benchmark)
//   build     present only in a DUET_BENCH_COMPILE_CHECK build (the test command's): its numbers
//             are not measurements (bench/CMakeLists.txt)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "json.hpp"

namespace duet::bench {

/// The `machine` object: hostname, hardware threads, physical memory, CPU model and the
/// kernel's transparent-huge-page mode (it changes the speed of large hash tables).
Json machine_info();

/// The commit to record: $DUET_COMMIT, else HEAD of the git tree at `source_dir`, else "unknown".
std::string commit_id(const std::string& source_dir);

/// The current UTC time as "2025-01-31T12:00:00Z" (compact=false) or "20250131T120000Z".
std::string utc_now(bool compact = false);

/// Median, minimum and maximum of a sample (all zero for an empty one).
struct Summary {
  double median = 0, min = 0, max = 0;
};
Summary summarize(std::vector<double> xs);
/// {"median", "min", "max"} of s, the form every results file uses for a summarized figure.
Json summary_json(const Summary& s);

/// The p-quantile (0..1) of `v` by rank: the element at floor(p * n), clamped to the last; 0 for
/// an empty sample. Reorders `v` (nth_element, linear time).
double percentile(std::vector<double>& v, double p);

/// Assembles the top-level document from its parts, in the convention's key order.
Json result_document(const std::string& benchmark, const std::string& device, const std::string& commit,
                     const std::string& date, Json config, Json records);

/// Writes `doc` to `path`, creating parent folders. Returns false (and says why in *error).
bool write_result_file(const std::string& path, const Json& doc, std::string* error);

}  // namespace duet::bench
