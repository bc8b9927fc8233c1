// The sweep of duet_bench_lit: builds and prefills each system per key range, runs every
// point's timed runs on all threads, and keeps one record per (system, workload, keys, theta).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../common/json.hpp"
#include "../common/results.hpp"
#include "options.hpp"
#include "systems.hpp"

namespace duet::bench::lit {

/// One measured point of one system.
struct Record {
  std::string system;
  WorkloadKind workload = WorkloadKind::kGet;
  std::uint64_t key_range = 0;
  std::optional<double> theta;   ///< Zipfian workloads only
  unsigned threads = 0;
  std::vector<double> mops;      ///< Mops/s of each run, in run order
  Summary summary;               ///< median, min, max of mops
  Tally tally;                   ///< counts summed over all runs and threads
  double prefill_s = 0;          ///< how long this map's (shared) prefill took
  Json structure;                ///< the system's stats() after this point's runs
  std::string error;             ///< non-empty when the point could not be measured

  /// "lit/80-10-10/k1e6" plus "/theta0.99" for Zipfian points.
  std::string name() const;
  /// Whether it ran and every check passed (no wrong value, no refused call).
  bool ok() const { return error.empty() && tally.wrong == 0 && tally.errors == 0; }
  Json to_json() const;
};

/// Runs the sweep of `o` (systems already resolved to available ones, threads > 0), appending
/// records in run order. Progress goes to stderr.
void run_sweep(const Options& o, std::vector<Record>* records);

}  // namespace duet::bench::lit
