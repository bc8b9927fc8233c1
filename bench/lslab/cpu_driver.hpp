// The CPU side of the benchmark: every CPU system over every configuration of the options.
#pragma once

#include <vector>

#include "options.hpp"
#include "report.hpp"

namespace duet::bench::lslab {

/// Runs each system in o.systems (all CPU systems, available ones) one after another, freeing
/// each map before the next is built, and appends one record per (system, R, load, op, batch)
/// in run order. The peers take no load factor and run once per R. Prints one progress line
/// per configuration on stderr.
void run_cpu_benchmark(const Options& o, std::vector<Record>* records);

}  // namespace duet::bench::lslab
