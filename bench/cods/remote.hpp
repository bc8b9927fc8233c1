// duet_bench_cods --figures remote: the CODS list, hash set and B-link tree on the simulated
// remote-memory backend (src/cods/remote.hpp, src/index/cods/remote_front.hpp), in the
// seed's RDMA shapes (list 2000/1000, hash set 10^5 buckets over range 10^5, tree 10^4/5000).
// For each structure, K and regime: the round trips per operation (reads, writes, CASes and
// node gets, one thread, no delay) and the throughput at the configured delay per round trip.
#pragma once

#include <cstdint>
#include <vector>

#include "common/json.hpp"

namespace duet::bench::cods {

struct RemoteRun {
  std::vector<unsigned> threads{1, 2};
  double seconds = 0.2;        ///< each throughput run's measured time
  unsigned repeats = 3;        ///< throughput runs per point (median and range)
  std::uint64_t count_ops = 20000;  ///< operations replayed to count round trips
  std::uint64_t stream = 1u << 16;  ///< operations generated per thread
  std::uint64_t seed = 1;
  std::uint64_t delay_ns = 1500;    ///< per round trip, in the throughput runs
  unsigned memory_nodes = 2;
  double mix = 95;                  ///< contains/GET percentage (the seed's RDMA figures)
};

/// Runs every remote point, printing a table row each and appending one record each to
/// *records. *ok is cleared when a point fails.
void remote_figures(const RemoteRun& run, Json* records, bool* ok);

}  // namespace duet::bench::cods
