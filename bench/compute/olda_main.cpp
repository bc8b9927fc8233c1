// duet_bench_olda: the standalone `duet bench olda` (olda_bench.hpp).
#include "bench/compute/olda_bench.hpp"

int main(int argc, char** argv) { return duet::bench::run_olda_bench(argc, argv); }
