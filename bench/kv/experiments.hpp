// The experiments of `duet bench kv`: which points a run measures (one configuration or a
// sweep of one parameter, KVCG section 2.8), how each system is prepared for a point, and the
// records and table rows the measurements become.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "../common/json.hpp"
#include "options.hpp"

namespace duet::bench::kv {

/// One measured configuration of a run.
struct Point {
  std::string label;        ///< "theta=0.9"; the workload tag for experiment none
  std::string sweep;        ///< the swept parameter ("theta", "threshold", "read_percent", "value_bytes"), or ""
  double value = 0;         ///< its value at this point
  Workload workload;
  Distribution distribution = Distribution::kZipfian;
  double theta = 0.99;
  std::size_t value_bytes = 8;
  double threshold = 0;     ///< kvcg's router threshold
  bool router_only = false; ///< only kvcg changes between points (others are measured once)
};

/// The points of the run `o` asks for, in order.
std::vector<Point> plan_points(const Options& o);

/// One line of the printed summary.
struct TableRow {
  std::string system, point, path;
  double ops_per_s = 0;         ///< wall clock (the headline)
  double ops_per_s_inside = 0;  ///< inside the store (secondary)
  double mean_us = 0, p50_us = 0, p99_us = 0, p999_us = 0, share = 0;
  std::string note;
};

/// Everything a run produced.
struct RunOutput {
  Json records = Json::array();
  std::vector<TableRow> rows;
  std::vector<std::string> notes;  ///< printed after the table (model-change events, errors)
  std::string device = "cpu";      ///< result-file `device`: the GPU's name, or "cpu"
  std::string device_tag = "cpu";  ///< "gpu" or "cpu", for the file name
  bool ok = true;                  ///< every request succeeded and every value verified
};

/// Runs the experiment of `o` on o.systems (resolved, available). Returns false with *error
/// when a system cannot be built or prefilled; request failures only clear out->ok.
bool run_experiment(const Options& o, RunOutput* out, std::string* error);

/// Prints the summary table of `out` on stdout.
void print_table(const RunOutput& out);

}  // namespace duet::bench::kv
