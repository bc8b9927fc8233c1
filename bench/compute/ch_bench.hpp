// `duet bench ch`: CH-benCHmark on the txn keyspace, embedded (docs/compute.md, "CH-benCHmark").
// The flags are listed at the top of ch_bench.cpp.
#pragma once

namespace duet::bench {

/// Runs the benchmark with the arguments after `duet bench` (argv[0] is "ch"). Returns the process
/// exit status: 0 when every run finished with every query fresh and the consistency conditions
/// holding, 1 when a run failed or the results file could not be written, 2 for bad options.
int run_ch_bench(int argc, char** argv);

}  // namespace duet::bench
