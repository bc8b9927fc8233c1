// `duet bench olda`: SnapKV's OLDA fraud microbenchmark (docs/compute.md, "OLDA"). The flags are
// listed at the top of olda_bench.cpp.
#pragma once

namespace duet::bench {

/// Runs the benchmark with the arguments after `duet bench` (argv[0] is "olda"). Returns the
/// process exit status: 0 when every run finished and no flagged payment committed, 1 when a
/// run failed or the results file could not be written, 2 for bad options.
int run_olda_bench(int argc, char** argv);

}  // namespace duet::bench
