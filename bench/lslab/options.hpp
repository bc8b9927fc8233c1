// Command-line options of duet_bench_lslab and their defaults.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../common/json.hpp"
#include "workload.hpp"

namespace duet::bench::lslab {

struct Options {
  std::string device = "cpu";              ///< "cpu" or "gpu"
  std::vector<std::string> systems;        ///< systems to run, in order
  std::vector<std::uint64_t> resident;     ///< resident key counts R
  std::vector<double> loads;               ///< L-Slab Config::load_factor values
  std::vector<std::uint64_t> batches;      ///< batch sizes
  std::vector<BenchOp> ops;                ///< operation mixes
  std::vector<unsigned> widths;            ///< GPU slab widths
  unsigned reps = 5;                       ///< timed repetitions per configuration
  std::uint64_t min_ops_per_rep = 0;       ///< a repetition runs at least max(batch, this) requests
  unsigned threads = 0;                    ///< CPU threads (all hardware threads)
  /// Peers run batches of <= this many requests on the calling thread alone (0: always split).
  /// 2048 mirrors kParallelGrain in src/index/lslab/cpu_map.cpp, so duet-cpu and the peers
  /// split (or not) the same batches.
  std::size_t peer_grain = 2048;
  std::uint64_t seed = 0x5eed'd0e7'1ab5'0001ull;
  std::uint64_t probe_bytes = 0;           ///< GPU random-access probe buffer
  std::uint64_t copy_bytes = 0;            ///< GPU device-to-device copy size
  bool quick = false;                      ///< smoke-test sizes
  std::string out;                         ///< JSON path ("" = bench/results/lslab-<device>-<time>.json)

  /// Every parameter, for the result file's `config`.
  Json to_json() const;
};

/// Parses argv into *o, filling in the defaults for the device and --quick. Returns false
/// with a message in *error for bad input; sets *help when --help was given.
bool parse_options(int argc, char** argv, Options* o, bool* help, std::string* error);

/// The --help text.
std::string usage();

/// "2^22" for powers of two, else the decimal number.
std::string pow2_string(std::uint64_t x);

}  // namespace duet::bench::lslab
