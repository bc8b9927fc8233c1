// L-Slab benchmark records: what one measurement is, how it goes into the result file's
// `records`, and the summary table on stdout.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../common/json.hpp"
#include "../common/results.hpp"

namespace duet::bench::lslab {

/// One measured configuration (a map run), or one bandwidth probe (system == "probe").
struct Record {
  std::string system;                 ///< "duet-cpu", "tbb", "libcuckoo", "libcds", "duet-gpu", "probe"
  std::string op;                     ///< "get", "put", "delete", "mix"; probes: "d2d_copy", "random_32B_read"
  std::uint64_t batch = 0;
  std::uint64_t resident = 0;
  std::optional<double> load_factor;  ///< absent for systems without one (the peers)
  unsigned threads = 0;               ///< CPU threads (0 for GPU records)
  unsigned reps = 0;
  std::uint64_t ops_per_rep = 0;      ///< requests timed per repetition
  Summary ops_per_s;                  ///< median / min / max over the repetitions
  std::uint64_t wrong_status = 0;     ///< requests whose status was not the expected one
  std::string error;                  ///< a failed execute() or setup, empty when fine
  // GPU records.
  unsigned slab_width = 0;            ///< 0 for CPU records
  std::string mode;                   ///< "resident" or "end_to_end" (GPU only)
  double bytes_per_op_estimate = 0;
  double fraction_of_random_access_limit = 0;
  // Probe records.
  double bytes_per_s = 0;
  std::uint64_t probe_bytes = 0;      ///< bytes moved per timed probe run

  bool is_probe() const { return system == "probe"; }
  /// Whether the run was correct: no error and every status as expected.
  bool ok() const { return error.empty() && wrong_status == 0; }
  /// "uniform-r22-load0.5" (or "uniform-r22" without a load factor).
  std::string workload() const;
  /// A unique name: "<system>/<workload>/<op>/b<batch>[/w<width>/<mode>]".
  std::string name() const;
  /// The record as the result file's convention has it.
  Json to_json() const;
};

/// Prints the aligned summary table of `records` (GPU columns when any record has them).
void print_table(const std::vector<Record>& records);

/// One progress line for stderr: "[k/n] name: 12.3 Mops/s (min .., max ..)".
std::string progress_line(const Record& r, std::size_t k, std::size_t n);

}  // namespace duet::bench::lslab
