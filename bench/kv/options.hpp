// Command-line options of `duet bench kv` and their defaults.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../common/json.hpp"
#include "duet/store.hpp"
#include "ycsb.hpp"

namespace duet::bench::kv {

/// What a run measures (KVCG section 2.8): one configuration, or a sweep of one parameter.
enum class Experiment : std::uint8_t {
  kNone = 0,         ///< the workload once per system
  kThetaSweep,       ///< Zipf theta over --points (default 0.5,0.7,0.9,0.99)
  kHotFractionSweep, ///< kvcg's router threshold over --points; others once, as references
  kRwSweep,          ///< read percentage over --points (default 100,95,80,50), updates the rest
  kValueSizeSweep,   ///< value bytes over --points (default 8,32,128,256,1024)
  kModelChange,      ///< kvcg only: latency over time while the key popularity shifts
};
/// "none", "theta-sweep", "hot-fraction-sweep", "rw-sweep", "value-size-sweep", "model-change".
const char* experiment_name(Experiment e);
/// Parses an experiment name; nullopt when unknown.
std::optional<Experiment> parse_experiment(const std::string& s);

struct Options {
  std::string workload_letter = "B";              ///< A, B, C, D or F
  std::optional<Distribution> distribution;       ///< default: the workload's (D: latest, else zipfian)
  std::optional<double> theta;                    ///< default 0.99; 0.5 for hot-fraction/rw/value-size sweeps
  std::uint64_t key_range = 1'000'000'000;        ///< keys are drawn from [0, key_range)
  std::uint64_t prefill = 10'000'000;             ///< keys 0..prefill-1 are inserted first
  std::uint64_t ops = 0;                          ///< measured requests per run; 0: run for `seconds`
  double seconds = 10;                            ///< length of a run when ops == 0
  std::uint64_t warmup = 5'000'000;               ///< requests before measuring (kvcg: model training)
  unsigned threads = 0;                           ///< client threads (0: hardware threads)
  std::size_t batch = 512;                        ///< requests per execute() call
  unsigned pipeline = 1;                          ///< batches each client keeps in flight
  std::size_t trace = 0;                          ///< Zipfian ranks drawn up front per client (0: on demand)
  unsigned orchestrators = 0;                     ///< Duet's orchestrator threads (0: the store's default)
  std::size_t max_aggregate = 0;                  ///< Duet's largest aggregated batch (0: the store's default)
  std::size_t value_bytes = 8;                    ///< bytes of every written value (>= 8)
  std::vector<std::string> systems;               ///< kvcg, kvc, kvg, tbb, libcuckoo (default: all)
  duet::DeviceChoice device = duet::DeviceChoice::kAuto;
  std::optional<double> threshold;                ///< kvcg router threshold (default RouterConfig's)
  Experiment experiment = Experiment::kNone;
  std::vector<double> points;                     ///< the swept values (default per experiment)
  unsigned repeat = 3;                            ///< runs per point; medians are reported
  std::uint64_t seed = 0x6b76'6367'0000'0001ull;
  double window_ms = 50;                          ///< model-change: latency window
  double pre_shift_s = 0.5;                       ///< model-change: seconds before the shift
  std::uint32_t switch_interval_ms = 1000;        ///< model-change: RouterConfig::min_switch_interval_ms
  bool quick = false;                             ///< CI smoke sizes
  std::string out_dir = "bench/results";          ///< where the JSON goes
  std::string out_file;                           ///< explicit JSON path (overrides out_dir)

  /// The workload chosen with --workload.
  Workload workload() const;
  /// The key distribution in force for workload w.
  Distribution distribution_for(const Workload& w) const;
  /// Theta in force (the experiment's default when --theta was not given).
  double theta_value() const;
  /// Every parameter, for the result file's `config`.
  Json to_json() const;
};

/// Parses the arguments after `duet bench kv` (argv[0] is "kv") into *o, applying --quick's
/// sizes where the command line left them open. Returns false with *error on bad input; sets
/// *help for --help.
bool parse_options(int argc, char** argv, Options* o, bool* help, std::string* error);

/// The --help text.
std::string usage();

}  // namespace duet::bench::kv
