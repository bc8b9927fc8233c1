// `duet bench transfer`: OranguTAN's transfer blocks in every mode on the same pre-generated
// blocks (docs/batch.md, "Benchmark"). The flags are listed at the top of transfer_bench.cpp.
#pragma once

namespace duet::bench {

/// Runs the benchmark with the arguments after `duet bench` (argv[0] is "transfer"). Returns the
/// process exit status: 0 when every mode ran and agreed, 1 when a run failed or the results
/// file could not be written, 2 for bad options.
int run_transfer_bench(int argc, char** argv);

}  // namespace duet::bench
