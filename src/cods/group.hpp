// Thread groups: who cooperates on one operation of a CODS data structure.
//
// A group is either one CPU thread (CpuThread, size 1) or a GPU tile of 8, 16 or 32 lanes of
// one warp (GpuTile<N>). Data-structure code is templated on the group and uses only the calls
// below, so the same source runs on both processors. Every call is a collective: all lanes of
// a group must make it together (on the CPU the single thread trivially does).
#pragma once

#include <cstdint>

#include "cods/hd.hpp"

#if defined(__CUDACC__)
#include <cooperative_groups.h>
#endif

namespace duet::cods {

/// One CPU thread acting alone: ballots are the predicate itself, shuffles are identities.
struct CpuThread {
  static constexpr unsigned kSize = 1;
  DUET_HD static constexpr unsigned size() { return 1; }
  DUET_HD static constexpr unsigned lane() { return 0; }
  DUET_HD static constexpr bool is_leader(unsigned leader = 0) { return leader == 0; }
  /// Bit i set when lane i's predicate holds (only bit 0 exists here).
  DUET_HD static constexpr std::uint32_t ballot(bool pred) { return pred ? 1u : 0u; }
  DUET_HD static constexpr bool any(bool pred) { return pred; }
  DUET_HD static constexpr bool all(bool pred) { return pred; }
  /// Value of v held by lane src (here: v).
  template <class T>
  DUET_HD static constexpr T shfl(T v, unsigned /*src*/) { return v; }
  DUET_HD static constexpr void sync() {}
};

#if defined(__CUDACC__)
/// A tile of N consecutive lanes of one warp (N = 8, 16 or 32), built from the calling block.
/// Costs: ballot and shuffle are single warp instructions; sync is a warp barrier.
template <unsigned N>
struct GpuTile {
  static_assert(N == 8 || N == 16 || N == 32, "a GPU group is a tile of 8, 16 or 32 lanes");
  static constexpr unsigned kSize = N;
  cooperative_groups::thread_block_tile<N> tile;

  __device__ explicit GpuTile(cooperative_groups::thread_block_tile<N> t) : tile(t) {}
  __device__ static GpuTile of_this_block() {
    return GpuTile(cooperative_groups::tiled_partition<N>(cooperative_groups::this_thread_block()));
  }
  __device__ static constexpr unsigned size() { return N; }
  __device__ unsigned lane() const { return tile.thread_rank(); }
  __device__ bool is_leader(unsigned leader = 0) const { return lane() == leader; }
  __device__ std::uint32_t ballot(bool pred) const { return tile.ballot(pred); }
  __device__ bool any(bool pred) const { return tile.any(pred); }
  __device__ bool all(bool pred) const { return tile.all(pred); }
  template <class T>
  __device__ T shfl(T v, unsigned src) const { return tile.shfl(v, src); }
  __device__ void sync() const { tile.sync(); }
};
#endif

}  // namespace duet::cods
