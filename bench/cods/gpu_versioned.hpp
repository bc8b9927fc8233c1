// The versioned B-link tree's GPU figures of duet_bench_cods (`--figures vtree`;
// gpu_versioned.cu, gpu_versioned_none.cpp without CUDA): the versioned tree against the plain
// tree on the same pre-generated work without ranges, with 10% ranges, and the shapes of Awad
// et al.'s MVGpuBTree figures (find, erase + find, inserts with range queries), plus the GPU LIT
// at 80/10/10 for reference. K = 14 on 16 lanes and K = 30 on 32 lanes, each also on one lane
// per request and in mixed mode (reads on the tiles, updates on one lane each), both regimes.
// 8-byte keys and values; half of [0, range) prefilled.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/json.hpp"
#include "duet/status.hpp"

namespace duet::bench::cods {

struct VersionedBenchOptions {
  std::uint64_t range = 20000000;  ///< keys uniform over [0, range); range / 2 prefilled
  std::uint64_t ops = 4000000;     ///< requests per measured batch
  std::uint64_t span = 100;        ///< a RANGE covers [a, a + span - 1] (about span / 2 keys)
  std::uint64_t limit = 64;        ///< pairs a RANGE may return
  unsigned repeats = 3;
  std::uint64_t seed = 1;
  /// Run only the systems whose names contain one of these (all when empty), e.g. "k30".
  std::vector<std::string> filter;
  /// Run only the mixes of these names (all when empty); an unknown name is InvalidArgument,
  /// before anything runs.
  std::vector<std::string> mixes;
};

/// Runs the figures; emit(record, row, ok) receives each JSON record, its printed row and
/// whether the measurement succeeded.
Status gpu_versioned_figures(const VersionedBenchOptions& o,
                             const std::function<void(Json, const std::string&, bool)>& emit);

}  // namespace duet::bench::cods
