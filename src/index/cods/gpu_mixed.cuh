// Mixed mode's schedule (GpuMode::kMixed, common.hpp), shared by both GPU batch drivers
// (gpu_batch.cu, gpu_versioned.cu). CUDA only (included by .cu files).
#pragma once

#include <cstdint>

#include "cods/group.hpp"
#include "index/cods/common.hpp"

namespace duet::cods::ds {

/// Runs a batch of n requests in mixed mode on the calling thread's tile g: each lane of a tile
/// takes a request; the tile runs the reads among them (is_read(op)) one after another, calling
/// read(src, j, i, op, key) on every lane, where src is the reading lane, j its request, and i,
/// op and key the calling lane's own request (the callee shuffles what it needs from lane src);
/// then every lane holding an update runs update(i, op, key) alone. All lanes of a tile make the
/// same number of rounds, so the tile's collectives stay converged. The grid strides over the
/// batch a tile's worth of requests per tile.
template <unsigned G, class IsRead, class Read, class Update>
__device__ DUET_INLINE void mixed_rounds(const GpuTile<G>& g, const Op* ops, const std::uint64_t* keys, std::uint64_t n,
                                         IsRead is_read, Read read, Update update) {
  const std::uint64_t tiles = std::uint64_t(gridDim.x) * blockDim.x / G;
  for (std::uint64_t base = (blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x) / G * G; base < n;
       base += tiles * G) {
    const std::uint64_t i = base + g.lane();
    const bool have = i < n;
    const Op op = have ? ops[i] : Op::kGet;
    const std::uint64_t k = have ? keys[i] : 0;
    std::uint32_t reads = g.ballot(have && is_read(op));
    while (reads != 0) {
      const unsigned src = __ffs(reads) - 1;
      reads &= reads - 1;
      read(src, base + src, i, op, k);
    }
    if (have && !is_read(op)) update(i, op, k);
    g.sync();
  }
}

}  // namespace duet::cods::ds
