// `duet bench ch --export DIR`: a CH database copied out for DuckDB (bench/compute/ch_duckdb.py),
// with Duet's Q1, Q3 and Q6 on the same snapshot (docs/compute.md, "CH queries beside DuckDB").
// ch_bench.cpp parses the flags.
#pragma once

#include <memory>
#include <string>

#include "compute/ch.hpp"

namespace duet::bench {

/// What one export does.
struct ChExport {
  compute::ch::Scale scale;
  std::string scale_name;  ///< "full" or "small", for the results file
  std::string dir;         ///< created when missing; receives four CSV files and duet.json
  unsigned reps = 5;       ///< times each of Duet's queries is timed
  unsigned load_threads = 2;
  std::shared_ptr<compute::Engine> engine;
};

/// Loads one database, writes the copy and Duet's query results and times. Returns 0, or 1 when
/// a step failed (saying which on stderr).
int run_ch_export(const ChExport& e);

}  // namespace duet::bench
