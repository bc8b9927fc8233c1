// `duet bench ch --q3-sweep`: Q3's READ and SNAPSHOT plans while its selectivity varies (the seed's
// Fig. 3.7; docs/compute.md, "Q3: READ vs SNAPSHOT"). ch_bench.cpp parses the flags.
#pragma once

#include <cstdint>
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
  /// OLTP worker threads running `worker_mix` beside the queries for the whole sweep (0: Q3 alone,
  /// on an unchanging database). Each cycles through its `worker_ops` pre-generated operations.
  unsigned workers = 0;
  std::string worker_mix = "seed";             ///< "seed" or "tpcc"
  std::uint64_t worker_ops = 20000;
  /// The workers' total pace in operations per second, split evenly (0: as fast as they can). The
  /// database grows with every NewOrder, so an unpaced sweep's memory grows with its length.
  double worker_rate = 0;
  bool quick = false;
  std::shared_ptr<compute::Engine> engine;     ///< the CPU operators of the snapshot-tables plan
  std::string out;                             ///< the JSON file to write
};

/// Loads one database, runs the sweep, prints a table and writes `out`. Before each selectivity's
/// timed queries of a round, one untimed transaction runs every plan at one snapshot: they must give
/// the same rows. With workers, every timed query must also see each NewOrder acknowledged before
/// it began (Ch::check_fresh). Returns 0; 1 when a query or a worker failed, two plans disagreed, a
/// query was stale or the file could not be written; 2 for a bad selectivity or worker mix, or
/// workers without operations.
int run_q3_sweep(const Q3Sweep& w);

}  // namespace duet::bench
