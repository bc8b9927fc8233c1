// duet_bench_ch: the standalone `duet bench ch` (ch_bench.hpp).
#include "bench/compute/ch_bench.hpp"

int main(int argc, char** argv) { return duet::bench::run_ch_bench(argc, argv); }
