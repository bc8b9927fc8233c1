// `duet bench kv`: YCSB workloads and KVCG's experiments against Duet's kv keyspace and CPU
// hash-map peers. See `duet bench kv --help` and bench/README.md.
#pragma once

namespace duet::bench {

/// Runs the benchmark with the arguments after `duet bench` (argv[0] is "kv"). Returns the
/// process exit status: 0 when every request succeeded and verified, 1 when a system could
/// not be opened or a request failed or returned a wrong value, 2 for bad options.
int run_kv_bench(int argc, char** argv);

}  // namespace duet::bench
