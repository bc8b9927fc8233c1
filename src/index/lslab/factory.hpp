// Internal to L-Slab: what the CPU twin and the GPU map share when they are created and when
// their slab pools grow. Not part of the public API.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "index/lslab/core.hpp"
#include "index/lslab/map.hpp"

namespace duet::lslab::detail {

/// log2 of slabs per pool chunk: 2^16, or fewer for maps with fewer buckets (at least 2^8).
inline unsigned chunk_shift_for(std::uint64_t buckets) {
  unsigned shift = 16;
  while (shift > 8 && (std::uint64_t(1) << shift) > buckets) --shift;
  return shift;
}

/// Overflow slabs to commit at creation: the configured number, or expected_keys / 16 / keys
/// per slab (at least 4096).
inline std::uint64_t initial_pool_slabs(const Config& c, unsigned keys_per_slab) {
  if (c.initial_pool_slabs) return c.initial_pool_slabs;
  return std::max<std::uint64_t>(4096, c.expected_keys / 16 / keys_per_slab);
}

/// Most slabs a pool may hold: the configured limit, 2^32 - 2 indices, and the chunk table.
inline std::uint64_t pool_slab_limit(const Config& c, unsigned chunk_shift) {
  const std::uint64_t hard = std::min<std::uint64_t>(kNullSlab - 1, std::uint64_t(kMaxChunks) << chunk_shift);
  return c.max_pool_slabs ? std::min(c.max_pool_slabs, hard) : hard;
}

/// Capacity to grow to from `cap` when `want` slabs are needed: 1.5x or one chunk more, at
/// least `want`, at most `limit`. A result below `want` means the limit forbids the growth.
inline std::uint64_t pool_growth_target(std::uint64_t cap, std::uint64_t want, unsigned chunk_shift,
                                        std::uint64_t limit) {
  return std::min(std::max({want, cap + cap / 2, cap + (std::uint64_t(1) << chunk_shift)}), limit);
}

/// The argument check every execute() starts with: InvalidArgument when a needed array is
/// null (only for a non-empty batch), otherwise Ok.
inline Status check_batch(const Batch& batch, const BatchResult& result) {
  if (batch.n != 0 && (!batch.ops || !batch.keys || !result.status || !result.values))
    return Status::InvalidArgument("batch of " + std::to_string(batch.n) + " requests has a null array");
  return Status::Ok();
}

/// Validates the configuration and creates MapT<width> through its init().
template <template <unsigned> class MapT>
Status make_map(const Config& c, std::unique_ptr<Map>* out, unsigned width) {
  Status s = validate_config(c);
  if (!s.ok()) return s;
  auto create = [&](auto m) {
    Status st = m->init();
    if (st.ok()) *out = std::move(m);
    return st;
  };
  switch (width) {
    case 8: return create(std::make_unique<MapT<8>>(c));
    case 16: return create(std::make_unique<MapT<16>>(c));
    case 32: return create(std::make_unique<MapT<32>>(c));
  }
  return Status::InvalidArgument("slab width must be 8, 16 or 32, got " + std::to_string(width));
}

}  // namespace duet::lslab::detail
