// Command-line options of duet_bench_lit and their defaults.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../common/json.hpp"
#include "workload.hpp"

namespace duet::bench::lit {

struct Options {
  std::vector<std::string> systems;        ///< systems to run, in order (empty: all built in)
  std::vector<WorkloadKind> workloads;     ///< workloads to run, in order
  std::vector<std::uint64_t> keys;         ///< key ranges of the uniform workloads
  std::vector<std::uint64_t> zipf_keys;    ///< key ranges of the Zipfian workload
  std::vector<double> thetas;              ///< Zipf skews
  unsigned threads = 0;                    ///< benchmark threads (0: hardware threads)
  double seconds = 2;                      ///< timed length of one run
  unsigned runs = 5;                       ///< runs per point; the median is reported
  std::uint64_t range_length = 50;         ///< keys a RANGE covers
  std::size_t zipf_trace = std::size_t{1} << 20;  ///< Zipfian keys drawn per thread before a run (cycled; a power of two)
  unsigned check_every = 16;               ///< check every n-th RANGE's output
  std::size_t lit_buckets = 10000;         ///< LIT root buckets
  std::uint64_t seed = 0x11700b3e4c4a2024ull;
  bool quick = false;                      ///< smoke-test sizes
  std::string out;                         ///< JSON path ("": bench/results/lit-cpu/lit-cpu-<time>.json)

  /// Every parameter, for the result file's `config` (systems and LIT details are added by main).
  Json to_json() const;
};

/// Parses argv into *o and fills the defaults (for --quick too; explicit options win).
/// Returns false with a message in *error for bad input; sets *help for --help.
bool parse_options(int argc, char** argv, Options* o, bool* help, std::string* error);

/// The --help text.
std::string usage();

/// "1e6" for powers of ten from 10, else the decimal number.
std::string key_label(std::uint64_t k);

}  // namespace duet::bench::lit
