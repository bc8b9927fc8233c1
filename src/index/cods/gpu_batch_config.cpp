// The configuration checks of the CODS GPU drivers (gpu_batch.hpp: check_gpu_config;
// gpu_versioned.hpp: check_gpu_versioned_config). Plain C++, compiled in every build: the CUDA
// drivers (gpu_batch.cu, gpu_versioned.cu) call them before touching a GPU, and so do the stubs
// of a build without CUDA (gpu_batch_none.cpp), so bad input is InvalidArgument everywhere.
#include <cstdint>
#include <string>

#include "index/cods/gpu_batch.hpp"
#include "index/cods/gpu_versioned.hpp"

namespace duet::cods::ds {
namespace {

constexpr std::uint64_t kTwoTo32 = std::uint64_t(1) << 32;

bool known_regime(Regime r) { return r == Regime::kElementwise || r == Regime::kFullyAtomic; }
bool known_mode(GpuMode m) { return m == GpuMode::kGroup || m == GpuMode::kMixed; }

Status check_pool_max(std::uint64_t pool_nodes, std::uint64_t pool_max_nodes) {
  if (pool_max_nodes < pool_nodes || pool_max_nodes > kTwoTo32)
    return Status::InvalidArgument("pool_max_nodes " + std::to_string(pool_max_nodes) + " is outside [pool_nodes " +
                                   std::to_string(pool_nodes) + ", 2^32]");
  return Status::Ok();
}

}  // namespace

Status check_gpu_config(const GpuConfig& c) {
  if (c.kind != GpuKind::kList && c.kind != GpuKind::kHashSet && c.kind != GpuKind::kTree)
    return Status::InvalidArgument("unknown structure kind");
  if (!known_regime(c.regime)) return Status::InvalidArgument("unknown regime");
  if (c.kind == GpuKind::kHashSet && (c.buckets == 0 || c.buckets > kTwoTo32))
    return Status::InvalidArgument("bucket count " + std::to_string(c.buckets) + " is outside [1, 2^32]");
  if (c.pool_nodes == 0 || c.pool_nodes > kTwoTo32)
    return Status::InvalidArgument("pool_nodes " + std::to_string(c.pool_nodes) + " is outside [1, 2^32]");
  if (Status s = check_pool_max(c.pool_nodes, c.pool_max_nodes); !s.ok()) return s;
  if (!known_mode(c.mode)) return Status::InvalidArgument("unknown mode");
  if (c.order != GpuOrder::kAuto && c.order != GpuOrder::kGetsFirst && c.order != GpuOrder::kIndex)
    return Status::InvalidArgument("unknown order");
  const unsigned k = c.keys_per_node, g = c.group;
  const bool lane = g == 1 && (k == 6 || k == 14 || k == 30);
  const bool built = (k == 6 && g == 8) || (k == 14 && (g == 8 || g == 16)) || (k == 30 && g == 32) || lane;
  if (!built)
    return Status::InvalidArgument("keys_per_node " + std::to_string(k) + " with group " + std::to_string(g) +
                                   " is not built; supported: (6, 8), (14, 8), (14, 16), (30, 32), (6 | 14 | 30, 1)");
  if (c.planted != Bug::kNone && c.mode == GpuMode::kMixed)
    return Status::InvalidArgument("a planted bug is for group mode only (mixed-mode lanes cannot agree to give up)");
  if (lane && c.mode == GpuMode::kMixed)
    return Status::InvalidArgument("mixed mode runs GETs on tiles: group must be 8, 16 or 32, not 1");
  return Status::Ok();
}

Status check_gpu_versioned_config(const GpuVersionedConfig& c) {
  if (!known_regime(c.regime)) return Status::InvalidArgument("unknown regime");
  if (c.pool_nodes < 2 || c.pool_nodes > kTwoTo32)
    return Status::InvalidArgument("pool_nodes " + std::to_string(c.pool_nodes) + " is outside [2, 2^32]");
  if (Status s = check_pool_max(c.pool_nodes, c.pool_max_nodes); !s.ok()) return s;
  if (!known_mode(c.mode)) return Status::InvalidArgument("unknown mode");
  const unsigned k = c.keys_per_node, g = c.group;
  if (!((k == 14 && (g == 16 || g == 1)) || (k == 30 && (g == 32 || g == 1))))
    return Status::InvalidArgument("keys_per_node " + std::to_string(k) + " with group " + std::to_string(g) +
                                   " is not built; supported: (14, 16), (30, 32), (14 | 30, 1)");
  if (g == 1 && c.mode == GpuMode::kMixed)
    return Status::InvalidArgument("mixed mode runs GETs and RANGEs on tiles: group must be 16 or 32, not 1");
  return Status::Ok();
}

}  // namespace duet::cods::ds
