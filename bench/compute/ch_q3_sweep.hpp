// `duet bench ch --q3-sweep`: Q3's READ and SNAPSHOT plans while its selectivity varies (the seed's
// Fig. 3.7; docs/compute.md, "Q3: READ vs SNAPSHOT"). ch_bench.cpp parses the flags.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compute/ch.hpp"

namespace duet::bench {

/// What one sweep runs.
struct Q3Sweep {
  compute::ch::Scale scale;
  std::string scale_name;                      ///< "full" or "small", for the results file
  std::vector<double> selectivities;           ///< each in [0, 1]
  std::vector<compute::ch::Q3Plan> plans;      ///< non-empty
  unsigned queries = 5;                        ///< per point per round
  unsigned rounds = 3;
  unsigned load_threads = 2;
  unsigned snapshot_threads = 1;
  bool quick = false;
  std::shared_ptr<compute::Engine> engine;     ///< the CPU operators of the snapshot-tables plan
  std::string out;                             ///< the JSON file to write
};

/// Loads one database, runs the sweep, prints a table and writes `out`. Returns 0, 1 when a query
/// failed, two plans disagreed or the file could not be written, 2 for a bad selectivity.
int run_q3_sweep(const Q3Sweep& w);

}  // namespace duet::bench
