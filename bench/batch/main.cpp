// duet_bench_transfer: the standalone `duet bench transfer` (transfer_bench.hpp).
#include "bench/batch/transfer_bench.hpp"

int main(int argc, char** argv) { return duet::bench::run_transfer_bench(argc, argv); }
